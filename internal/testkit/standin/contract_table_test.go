package standin

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/testkit/standin/standintest"
)

// The stand-in's conformance to ralphd's bd contract (beads.ContractCases):
// the table `ralphd doctor --bd` runs against the user's bd runs here
// against the stand-in, and each case that names a recording is checked
// against it, so the table, the stand-in and the recordings agree.

// standinBinary builds the stand-in bd once for these tests.
var standinBinary = sync.OnceValues(standintest.Binary)

func checkStandin(t *testing.T, env ...string) beads.ContractReport {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the stand-in and runs the whole contract")
	}
	bin, err := standinBinary()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := beads.CheckContract(ctx, beads.ContractOptions{Bin: bin, Env: env, TempDir: t.TempDir()})
	if err != nil {
		t.Fatalf("CheckContract: %v", err)
	}
	return rep
}

// TestContractTableStandin: the stand-in passes every case, warnings
// included.
func TestContractTableStandin(t *testing.T) {
	is := is.New(t)
	rep := checkStandin(t)
	is.Equal(len(rep.Results), len(beads.ContractCases())) // every case ran
	is.Equal(rep.Version.Number, "1.0.5")
	for _, r := range rep.Results {
		if r.Verdict != beads.Passed {
			t.Errorf("%s %s: %s", r.Verdict, r.Name, strings.Join(r.Diffs, "; "))
		}
	}
}

// TestContractTableDeviations: a stand-in started with a deliberate
// deviation fails the check, in the case that covers it, with a
// difference that names it; and nothing it does not touch fails.
func TestContractTableDeviations(t *testing.T) {
	for _, tc := range []struct {
		deviate string
		fails   map[string]string // case name → a phrase of its difference
		warns   map[string]string
		alsoOK  []string // cases the deviation must leave passing
	}{
		{
			deviate: DeviateRenamedField,
			fails: map[string]string{
				"create":                   "without a priority",
				"show":                     "without a priority",
				"ready, in priority order": "without a priority",
				"update --claim":           "without a priority",
			},
			alsoOK: []string{"version", "update --claim by a second actor", "comments", "stats"},
		},
		{
			deviate: DeviateExitCode,
			fails:   map[string]string{"ready --claim with nothing to claim": "exit 1, want 0"},
			alsoOK:  []string{"ready --claim", "ready with no issues"},
		},
		{
			deviate: DeviateRefusedFlag,
			fails:   map[string]string{"update --append-notes": "unknown flag: --append-notes"},
			alsoOK:  []string{"update --notes over notes"},
		},
		{
			// ralphd copes with later bds' notes rules: warnings only.
			deviate: DeviateNotes,
			warns: map[string]string{
				"update --notes over notes": "already has notes",
				"update --notes \"\"":       "--clear-notes",
			},
			alsoOK: []string{"update --append-notes"},
		},
		{
			// A refused claim that exits 13 is still a refusal ralphd reads.
			deviate: DeviateClaimStale,
			alsoOK:  []string{"update --claim by a second actor", "two actors race to claim"},
		},
	} {
		t.Run(tc.deviate, func(t *testing.T) {
			rep := checkStandin(t, DeviateEnv+"="+tc.deviate)
			byName := map[string]beads.CaseResult{}
			for _, r := range rep.Results {
				byName[r.Name] = r
			}
			for name, phrase := range tc.fails {
				r := byName[name]
				if r.Verdict != beads.Differs || !strings.Contains(strings.Join(r.Diffs, "; "), phrase) {
					t.Errorf("%s: %s %v, want FAIL naming %q", name, r.Verdict, r.Diffs, phrase)
				}
			}
			for name, phrase := range tc.warns {
				r := byName[name]
				if r.Verdict != beads.Tolerated || !strings.Contains(strings.Join(r.Diffs, "; "), phrase) {
					t.Errorf("%s: %s %v, want warn naming %q", name, r.Verdict, r.Diffs, phrase)
				}
			}
			for _, name := range tc.alsoOK {
				if r := byName[name]; r.Verdict != beads.Passed {
					t.Errorf("%s: %s %v, want ok: the deviation does not touch it", name, r.Verdict, r.Diffs)
				}
			}
			if len(tc.fails) == 0 && len(rep.Failed()) > 0 {
				t.Errorf("failed: %v", rep.Failed())
			}
			if len(tc.fails) > 0 && len(rep.Failed()) == 0 {
				t.Error("the check passed a deviating bd")
			}
		})
	}
}

// TestContractTableRecordings: each case that names a recording expects
// what bd 1.0.5 did there, and every recording named exists.
func TestContractTableRecordings(t *testing.T) {
	fixtures := loadFixtures(t)
	named := 0
	for _, c := range beads.ContractCases() {
		if c.Fixture == "" {
			continue
		}
		named++
		t.Run(c.Name, func(t *testing.T) {
			f, ok := fixtures[c.Fixture]
			if !ok {
				t.Fatalf("the case names recording %q, which testdata/contract lacks", c.Fixture)
			}
			rec := recording{Command: f.Command, Exit: f.Exit, Stdout: f.Stdout, Stderr: f.Stderr}
			if diffs := checkRecording(c, rec); len(diffs) > 0 {
				t.Errorf("recording %s differs from the case:\n%s", c.Fixture, strings.Join(diffs, "\n"))
			}
		})
	}
	if named < 20 {
		t.Errorf("only %d cases name a recording", named)
	}
}

// TestContractRecordingMismatchFails plants a difference: a case checked
// against a recording of another command, and against a recording whose
// exit code is not the one expected, must fail.
func TestContractRecordingMismatchFails(t *testing.T) {
	is := is.New(t)
	fixtures := loadFixtures(t)
	var claim beads.ContractCase
	for _, c := range beads.ContractCases() {
		if c.Name == "update --claim by a second actor" {
			claim = c
		}
	}
	f := fixtures[claim.Fixture]
	is.Equal(len(checkRecording(claim, recording{Command: f.Command, Exit: f.Exit, Stdout: f.Stdout, Stderr: f.Stderr})), 0)
	diffs := checkRecording(claim, recording{Command: f.Command, Exit: 0, Stdout: f.Stdout, Stderr: f.Stderr})
	is.True(len(diffs) > 0) // exit 0 where bd must refuse
	other := fixtures["show-json"]
	diffs = checkRecording(claim, recording{Command: other.Command, Exit: 1, Stderr: f.Stderr})
	is.True(strings.Contains(fmt.Sprint(diffs), `the recording runs bd "show"`))
}

func TestMain(m *testing.M) { os.Exit(standintest.Main(m.Run)) }

// recording is one recorded bd run: its command line, exit code and
// output.
type recording struct {
	Command        string
	Exit           int
	Stdout, Stderr string
}

// checkRecording lists how a recorded run differs from the case's
// expectation, with the case's FixtureVars for its names; the case's bd
// subcommand must be the recording's too.
func checkRecording(c beads.ContractCase, rec recording) []string {
	vars := map[string]string{}
	for k, v := range c.FixtureVars {
		vars[k] = v
	}
	var diffs []string
	if want, got := subcommand(c.Run.Args), subcommand(commandArgs(rec.Command)); want != got {
		diffs = append(diffs, fmt.Sprintf("the recording runs bd %q, the case bd %q", got, want))
	}
	return append(diffs, c.Judge("", commandArgs(rec.Command), []byte(rec.Stdout), []byte(rec.Stderr), rec.Exit, vars)...)
}

// commandArgs is bd's argv in a recorded command line: its words after
// any VAR=value prefixes and the program name. Quoted words are split,
// which leaves the command words (before any quoted value) intact.
func commandArgs(line string) []string {
	words := strings.Fields(line)
	for len(words) > 0 && strings.Contains(words[0], "=") {
		words = words[1:]
	}
	if len(words) > 0 {
		words = words[1:]
	}
	return words
}

// subcommands are bd's commands whose second word picks a subcommand.
var subcommands = map[string][]string{
	"dep":      {"add", "remove", "list", "tree"},
	"label":    {"add", "remove", "list", "list-all"},
	"comments": {"add"},
}

// subcommand is the command of a bd argv: its first word that is not a
// flag (global flags with a value skipped), and the subcommand after it.
func subcommand(args []string) string {
	var words []string
	for i := 0; i < len(args) && len(words) < 2; i++ {
		a := args[i]
		switch {
		case a == "--actor" || a == "-C" || a == "--db":
			i++
		case strings.HasPrefix(a, "-"):
		case len(words) == 0:
			words = append(words, a)
		default:
			if slices.Contains(subcommands[words[0]], a) {
				words = append(words, a)
			}
			return strings.Join(words, " ")
		}
	}
	return strings.Join(words, " ")
}
