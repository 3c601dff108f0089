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
	Samples    int
	ByProgram  []progShare
	// MainTop and GuardTop are the heaviest functions (inclusive) of the
	// ralphd process itself and of the guard processes, as perf prints
	// them.
	MainTop, GuardTop []string
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
// of tpl and summarises where the CPU went. Without perf (or without the
// right to use it) it says why and returns no profile.
func (e *benchEnv) profileBuild(ctx context.Context, tpl string, issues int) profile {
	perf, err := exec.LookPath("perf")
	if err != nil {
		return profile{Skipped: "perf is not installed (apt-get install linux-perf or linux-tools-generic gives one)"}
	}
	dir := filepath.Join(e.work, "profile")
	if err := copyTree(ctx, tpl, dir); err != nil {
		return profile{Skipped: err.Error()}
	}
	defer os.RemoveAll(dir)
	data := filepath.Join(e.work, "perf.data")
	defer os.Remove(data)
	pidFile := filepath.Join(e.work, "perf-main.pid")
	args := append([]string{"record", "-F", strconv.Itoa(perfFreq), "-g", "-o", data, "--",
		"sh", "-c", `echo $$ > "$0"; exec "$@"`, pidFile, "ralphd"}, e.ralphdArgs(issues, e.bd())...)
	// `exec "$@"` runs argv[0] "ralphd" from PATH: the bench bin dir is first.
	p := profile{Iterations: issues, Command: fmt.Sprintf("perf record -F %d -g -- ralphd %s", perfFreq, strings.Join(shellQuoteAll(e.ralphdArgs(issues, "bd")), " "))}
	if out, err := run(ctx, e.env(), dir, perf, args...); err != nil {
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
	out, err := run(ctx, e.env(), dir, perf, "script", "-i", data, "-F", "comm,pid")
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
				name = "ralphd bd-guard"
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

	p.MainTop = perfTop(ctx, e, dir, perf, data, mainPID)
	gp := make([]string, 0, len(guards))
	for g := range guards {
		gp = append(gp, g)
	}
	sort.Strings(gp)
	if len(gp) > 0 {
		p.GuardTop = perfTop(ctx, e, dir, perf, data, strings.Join(gp, ","))
	}
	return p
}

// interesting picks, from an inclusive profile, ralphd's own functions and
// the runtime and library calls that explain them.
var interesting = regexp.MustCompile(`ralphd/ralphd/|^main\.|^runtime\.doInit1$|^os/exec\.\(\*Cmd\)\.Start$|^runtime\.gcBgMarkWorker$|^os\.ReadFile$|^syscall\.forkExec$|^regexp\.compile$|^runtime\.schedinit$`)

// perfTop returns the heaviest interesting functions (inclusive, as a
// share of those processes' samples) of the processes pids.
func perfTop(ctx context.Context, e *benchEnv, dir, perf, data, pids string) []string {
	out, err := run(ctx, e.env(), dir, perf, "report", "-i", data, "--pid", pids, "--children", "--sort", "sym",
		"-g", "none", "--percentage", "relative", "--stdio", "--percent-limit", "1.5")
	if err != nil {
		return []string{"perf report failed: " + firstLine(out)}
	}
	var top []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		m := perfLineRE.FindStringSubmatch(sc.Text())
		if m == nil || !interesting.MatchString(m[3]) {
			continue
		}
		sym := strings.ReplaceAll(m[3], "github.com/ralphd/ralphd/internal/", "")
		top = append(top, fmt.Sprintf("%6s%%  %s", m[1], sym))
		if len(top) == 22 {
			break
		}
	}
	return top
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// shellQuoteAll quotes each argument that needs it for a POSIX shell.
func shellQuoteAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = shellQuote(a)
	}
	return out
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
