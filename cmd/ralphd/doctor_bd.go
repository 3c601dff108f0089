package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/config"
	"github.com/ralphd/ralphd/internal/modes"
	"github.com/ralphd/ralphd/internal/state"
)

// `ralphd doctor --bd` runs ralphd's bd contract (internal/beads
// contract.go) against the user's bd, and records the result per bd
// version for the runs that start later (checkBDVersion).

// contractSwitch takes the bare --bd switch out of doctor's arguments: a
// --bd (or -bd) with no value after it (the last argument, or one
// followed by a flag) asks for the contract check; --bd PATH and
// --bd=PATH still name the binary.
func contractSwitch(args []string) (rest []string, on bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(rest, args[i:]...), on
		}
		if (a == "--bd" || a == "-bd") && (i+1 == len(args) || strings.HasPrefix(args[i+1], "-")) {
			on = true
			continue
		}
		rest = append(rest, a)
	}
	return rest, on
}

// doctorBD checks the bd of cfg against the contract, prints one line per
// case and a summary, records the result, and returns 1 when bd differs
// in something ralphd relies on.
func doctorBD(ctx context.Context, a *app, cfg *config.Config) int {
	bin := cfg.BD
	if bin == "" {
		bin = "bd"
	}
	path, err := beads.LookPath(bin)
	if err != nil {
		errorf(a.stderr, "%v", err)
		return exitUsage
	}
	v, verr := beads.ReadVersion(ctx, path)
	switch {
	case verr != nil:
		fmt.Fprintf(a.stdout, "bd    %s: cannot read its version: %v\n", path, verr)
	case v.Verified():
		fmt.Fprintf(a.stdout, "bd    %s (%s): verified\n", v.Line, path)
	default:
		fmt.Fprintf(a.stdout, "bd    %s (%s): not verified; ralphd is verified against bd %s\n",
			v.Line, path, strings.Join(beads.VerifiedVersions, ", "))
	}
	rep, err := beads.CheckContract(ctx, beads.ContractOptions{Bin: path, Progress: func(r beads.CaseResult) {
		printCase(a.stdout, r)
	}})
	if err != nil {
		errorf(a.stderr, "bd contract: %v", err)
		return exitError
	}
	return summarise(a, rep, verr == nil)
}

// printCase prints one case: "ok    name", or the verdict, the name and
// each difference.
func printCase(w io.Writer, r beads.CaseResult) {
	line := fmt.Sprintf("%-4s  %s", string(r.Verdict), r.Name)
	if len(r.Diffs) > 0 {
		line += ": " + strings.Join(r.Diffs, "; ")
	}
	if r.Tolerated != "" {
		line += " (ralphd copes: " + r.Tolerated + ")"
	}
	fmt.Fprintln(w, line)
}

// summarise prints the counts, records the check for bd's version, and
// returns the exit code.
func summarise(a *app, rep beads.ContractReport, haveVersion bool) int {
	counts := map[beads.Verdict]int{}
	for _, r := range rep.Results {
		counts[r.Verdict]++
	}
	var diffs []string
	for _, r := range rep.Failed() {
		diffs = append(diffs, r.Name+": "+strings.Join(r.Diffs, "; "))
	}
	fmt.Fprintf(a.stdout, "%d checks: %d ok, %d warn, %d FAIL\n",
		len(rep.Results), counts[beads.Passed], counts[beads.Tolerated], counts[beads.Differs])
	if !haveVersion {
		warnf(a.stderr, "bd did not say its version, so this check is not recorded")
	} else {
		c := state.BDCheck{Version: rep.Version.Number, Bin: rep.Bin, CheckedAt: time.Now().UTC(),
			Passed: len(diffs) == 0, Differences: diffs}
		if err := state.WriteBDCheck(stateRoot(a), c); err != nil {
			warnf(a.stderr, "%v", err)
		}
	}
	if len(diffs) > 0 {
		errorf(a.stderr, "bd %s differs from what ralphd relies on in %d of %d checks", rep.Version.Number, len(diffs), len(rep.Results))
		hintf(a.stderr, "use bd %s, which ralphd is verified against; `build` and the daemon refuse this bd until a later check passes, "+
			"unless bd_contract_override is set", strings.Join(beads.VerifiedVersions, ", "))
		return exitError
	}
	return exitOK
}

// checkBDVersion reads bd's version as a run starts. A verified version
// says nothing. Another one is warned about once, with the way to check
// it, unless `ralphd doctor --bd` passed it; when that check failed, BUILD
// (build and the daemon) refuses to start with the differences, unless
// bd_contract_override is set, and plan warns. It also finds out whether
// this bd's claims take leases (from bd's changelog, not verified against
// that version).
func checkBDVersion(ctx context.Context, a *app, bin, mode string, cfg *config.Config) int {
	v, err := beads.ReadVersion(ctx, bin)
	if err != nil {
		warnf(a.stderr, "cannot read bd's version (%v); `ralphd doctor --bd` checks this bd against what ralphd relies on", err)
		return exitOK
	}
	if v.Verified() {
		return exitOK
	}
	beads.ProbeLeases(ctx, bin)
	verified := strings.Join(beads.VerifiedVersions, ", ")
	rec, found, err := state.ReadBDCheck(stateRoot(a), v.Number)
	switch {
	case err != nil:
		warnf(a.stderr, "%v; run `ralphd doctor --bd` to check bd %s again", err, v.Number)
	case !found:
		warnf(a.stderr, "bd %s is not a version ralphd is verified against (%s); run `ralphd doctor --bd` to check it", v.Number, verified)
	case rec.Passed:
	case cfg.BDContractOverride:
		warnf(a.stderr, "bd %s failed `ralphd doctor --bd` on %s; running anyway, as bd_contract_override is set (%s)",
			v.Number, rec.CheckedAt.Format(time.DateOnly), cfg.Source("bd_contract_override"))
	case mode == modes.ModePlan:
		warnf(a.stderr, "bd %s failed `ralphd doctor --bd` on %s, in what ralphd relies on: %s",
			v.Number, rec.CheckedAt.Format(time.DateOnly), strings.Join(rec.Differences, "; "))
	default:
		errorf(a.stderr, "bd %s (%s) failed `ralphd doctor --bd` on %s, in what ralphd relies on:", v.Number, bin, rec.CheckedAt.Format(time.DateOnly))
		for _, d := range rec.Differences {
			fmt.Fprintf(a.stderr, "  %s\n", d)
		}
		hintf(a.stderr, "use bd %s, which ralphd is verified against, and run `ralphd doctor --bd` again; "+
			"or set bd_contract_override (--bd-contract-override) to run anyway", verified)
		return exitUsage
	}
	return exitOK
}
