package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/ralphd/ralphd/internal/text"
)

// perfFreq is the sampling frequency: one sample is about a millisecond
// of CPU.
const perfFreq = 999

// profile is a CPU profile of one `ralphd build` run over every process
// it started, taken with perf.
type profile struct {
	Skipped    string // why there is no profile, when there is none
	Command    string
	Iterations int
	Per        string // what Iterations counts: "iteration" (the default) or "run"
	Samples    int
	ByProgram  []progShare
	// MainTop and GuardTop are the heaviest functions (inclusive) of the
	// ralphd process itself and of the guard processes, as perf prints
	// them.
	MainTop, GuardTop []string
	// MainPct is the inclusive share of every function in MainTop.
	MainPct map[string]float64
}

// progShare is the CPU one kind of process used.
type progShare struct {
	Name    string
	Samples int
}

// msPerIter converts samples to CPU milliseconds per iteration.
func (p profile) msPerIter(samples int) float64 {
	return float64(samples) * 1000 / perfFreq / float64(max(p.Iterations, 1))
}

var perfLineRE = regexp.MustCompile(`^\s*([0-9.]+)%\s+([0-9.]+)%\s+\[[.k]\]\s+(.+?)\s*$`)

// profileBuild runs `ralphd build` under `perf record -g` on a fresh copy
// of tpl and summarises where the CPU went.
func (e *benchEnv) profileBuild(ctx context.Context, tpl string, issues int) profile {
	dir := filepath.Join(e.work, "profile")
	if err := copyTree(ctx, tpl, dir); err != nil {
		return profile{Skipped: err.Error()}
	}
	defer os.RemoveAll(dir)
	return e.perfProfile(ctx, dir, e.env(), issues, e.ralphdArgs(issues, e.bd()),
		"ralphd "+text.ShellJoin(e.ralphdArgs(issues, "bd")))
}

// perfProfile runs ralphd with args in dir under `perf record -g` and
// summarises where the CPU went: per kind of process, and the heaviest
// functions of the ralphd process itself and of its guard processes.
// Without perf (or without the right to use it) it says why and returns
// no profile. display is the ralphd command as the report shows it.
func (e *benchEnv) perfProfile(ctx context.Context, dir string, env []string, iterations int, args []string, display string) profile {
	perf, err := exec.LookPath("perf")
	if err != nil {
		return profile{Skipped: "perf is not installed (the linux-perf or linux-tools package has it)"}
	}
	data := filepath.Join(e.work, "perf.data")
	defer os.Remove(data)
	pidFile := filepath.Join(e.work, "perf-main.pid")
	// `exec "$@"` runs "ralphd" from PATH, where the bench bin dir is first;
	// the shell's pid, written first, becomes ralphd's.
	rec := append([]string{"record", "-F", strconv.Itoa(perfFreq), "-g", "-o", data, "--",
		"sh", "-c", `echo $$ > "$0"; exec "$@"`, pidFile, "ralphd"}, args...)
	p := profile{Iterations: iterations, Per: "iteration", Command: fmt.Sprintf("perf record -F %d -g -- %s", perfFreq, display)}
	if out, err := run(ctx, env, dir, perf, rec...); err != nil {
		p.Skipped = "perf record failed (kernel.perf_event_paranoid may forbid it): " + firstLine(out)
		return p
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		p.Skipped = "perf record did not run ralphd: " + err.Error()
		return p
	}
	mainPID := strings.TrimSpace(string(b))

	// Samples per kind of process.
	out, err := run(ctx, env, dir, perf, "script", "-i", data, "-F", "comm,pid")
	if err != nil {
		p.Skipped = "perf script failed: " + firstLine(out)
		return p
	}
	counts := map[string]int{}
	guards := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		comm, pid := f[0], f[len(f)-1]
		name := comm
		if comm == "ralphd" {
			if pid == mainPID {
				name = "ralphd (the loop)"
			} else {
				name = "ralphd bd-client"
				guards[pid] = true
			}
		}
		counts[name]++
		p.Samples++
	}
	for n, c := range counts {
		p.ByProgram = append(p.ByProgram, progShare{Name: n, Samples: c})
	}
	sort.Slice(p.ByProgram, func(i, j int) bool { return p.ByProgram[i].Samples > p.ByProgram[j].Samples })

	p.MainTop, p.MainPct = perfTop(ctx, env, dir, perf, data, mainPID)
	gp := make([]string, 0, len(guards))
	for g := range guards {
		gp = append(gp, g)
	}
	sort.Strings(gp)
	if len(gp) > 0 {
		p.GuardTop, _ = perfTop(ctx, env, dir, perf, data, strings.Join(gp, ","))
	}
	return p
}

// interesting picks, from an inclusive profile, ralphd's own functions and
// the runtime and library calls that explain them.
var interesting = regexp.MustCompile(`ralphd/ralphd/|^main\.|^runtime\.(main|doInit1|schedinit|gcBgMarkWorker)$|^os/exec\.\(\*Cmd\)\.Start$|^os\.ReadFile$|^syscall\.forkExec$|^regexp\.compile$|^github\.com/tidwall/gjson\.(Get|GetBytes|Parse|ParseBytes|Valid|ValidBytes)$`)

// perfTop returns the heaviest interesting functions (inclusive, as a
// share of those processes' samples) of the processes pids, as lines and
// by name.
func perfTop(ctx context.Context, env []string, dir, perf, data, pids string) ([]string, map[string]float64) {
	out, err := run(ctx, env, dir, perf, "report", "-i", data, "--pid", pids, "--children", "--sort", "sym",
		"-g", "none", "--percentage", "relative", "--stdio", "--percent-limit", "1.5")
	if err != nil {
		return []string{"perf report failed: " + firstLine(out)}, nil
	}
	var top []string
	pct := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		m := perfLineRE.FindStringSubmatch(sc.Text())
		if m == nil || !interesting.MatchString(m[3]) {
			continue
		}
		sym := strings.ReplaceAll(strings.ReplaceAll(m[3], "github.com/ralphd/ralphd/internal/", ""), "github.com/tidwall/", "")
		top = append(top, fmt.Sprintf("%6s%%  %s", m[1], sym))
		pct[sym], _ = strconv.ParseFloat(m[1], 64)
		if len(top) == 22 {
			break
		}
	}
	return top, pct
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
