package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"
)

const module = "github.com/ralphd/ralphd"

// floors is the house plan: each production package and its floor. A
// package may import only packages on lower floors, so a reader can take
// in the house from the ground up, and an arrow that points back up (or
// sideways, between two rooms on one floor) fails TestLayers. A new
// package gets a row here; the test fails until it has one.
var floors = map[string]int{
	// 0: no ralphd imports.
	"internal/atomicfile": 0, // atomic, no-follow writes and reads
	"internal/proc":       0, // subprocesses in their own group and cgroup
	"internal/text":       0, // words ralphd prints and reads

	// 1: the outside world, each through one package.
	"internal/agent":   1, // agent CLIs: one backend each
	"internal/beads":   1, // the bd CLI, and claims through it
	"internal/broker":  1, // the bd client/server wire between an agent and ralphd
	"internal/git":     1, // every git call, worktrees, refs, scrubs, snapshots
	"internal/judge":   1, // evidence and acceptance: did the work pass
	"internal/sandbox": 1, // the bubblewrap layout of a BUILD agent

	// 2: records and settings.
	"internal/logjsonl": 2, // the run log, its events and runs
	"internal/mergeq":   2, // the merge queue and its integration strategies
	"prompts":           2, // the BUILD and PLANNING prompts

	// 3: what ralphd remembers, and tells.
	"internal/config": 3, // defaults, file, env, flags; above agent and mergeq, whose names it allows
	"internal/notify": 3, // notifications
	"internal/state":  3, // attempts, history, reports, locks

	// 4: the powers BUILD is held to, and the views of a run.
	"internal/dashboard": 4, // dashboard and /metrics
	"internal/guard":     4, // policy, guard, tamper detection

	// 5: the loop.
	"internal/modes": 5, // BUILD, PLANNING, the daemon, workers

	// 6: commands.
	"cmd/ralphd":    6,
	"cmd/ralphd-bd": 6,
}

// listed is one package as go list -json describes it.
type listed struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// goList returns every package of the module, with its imports and
// dependencies (tests excluded: they may reach for the test kit).
func goList(t *testing.T) []listed {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "list", "-json", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		p.ImportPath = strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// ours returns the module-relative paths of the module's packages in
// paths.
func ours(paths []string) []string {
	var out []string
	for _, p := range paths {
		if rest, ok := strings.CutPrefix(p, module+"/"); ok {
			out = append(out, rest)
		}
	}
	return out
}

// outsideProduct reports whether a package is test kit or benchmark, which
// may import any floor and is imported by no product package.
func outsideProduct(p string) bool {
	return strings.HasPrefix(p, "internal/testkit") || p == "bench" || strings.HasPrefix(p, "bench/")
}

// TestLayers holds the code to the house plan: every production package
// has a floor, imports only lower floors, and the product imports nothing
// of the test kit or the benchmarks.
func TestLayers(t *testing.T) {
	for _, p := range goList(t) {
		if outsideProduct(p.ImportPath) {
			continue
		}
		floor, ok := floors[p.ImportPath]
		if !ok {
			t.Errorf("%s has no floor: add it to floors in cmd/ralphd/layers_test.go, below everything it is built on", p.ImportPath)
			continue
		}
		for _, imp := range ours(p.Imports) {
			if outsideProduct(imp) {
				if p.ImportPath == "cmd/ralphd" && imp == "internal/testkit/standin" {
					continue // the demo's stand-in bd: one explicit edge, cmd_demo.go
				}
				t.Errorf("%s imports %s: the product must not import the test kit or the benchmarks", p.ImportPath, imp)
				continue
			}
			if f, ok := floors[imp]; ok && f >= floor {
				t.Errorf("%s (floor %d) imports %s (floor %d): a package imports only lower floors", p.ImportPath, floor, imp, f)
			}
		}
	}
	var listedPaths []string
	for p := range floors {
		listedPaths = append(listedPaths, p)
	}
	sort.Strings(listedPaths)
	if len(listedPaths) > 20 {
		t.Errorf("%d production packages (at most 20): %s", len(listedPaths), strings.Join(listedPaths, " "))
	}
}

// TestNoScriptedModelInTheBinary: ralphd links no scripted model API, and
// the BUILD loop's packages reach nothing of the test kit, even through
// another package.
func TestNoScriptedModelInTheBinary(t *testing.T) {
	for _, p := range goList(t) {
		if outsideProduct(p.ImportPath) {
			continue
		}
		for _, dep := range ours(p.Deps) {
			switch {
			case strings.HasPrefix(dep, "internal/testkit/scriptedapi"):
				t.Errorf("%s depends on %s: no scripted model API in the product", p.ImportPath, dep)
			case outsideProduct(dep) && !(p.ImportPath == "cmd/ralphd" && dep == "internal/testkit/standin"):
				t.Errorf("%s depends on %s: the BUILD loop's packages import nothing of the test kit", p.ImportPath, dep)
			}
		}
	}
}
