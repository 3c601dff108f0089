package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ralphd/ralphd/bench"
	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/git"
	"github.com/ralphd/ralphd/internal/mergeq"
)

// Section 6 measures parallel workers (issue 19): the parts they are built
// from (bd claims through internal/beads, across two clones sharing one
// tracker, and the merge queue of internal/mergeq), and `ralphd build
// --workers K` itself (6e and 6f, workers_scale.go).

const (
	benchWorkers   = 8
	mergeRounds    = 8 // integrations per worker in the merge-queue figure
	workersSrvPort = "45011"
)

// workersResult is what section 6 measured.
type workersResult struct {
	Scale        []scaleRun // ralphd build --workers 1 and 8
	Claims       int        // issues, each claimed once
	Won          int        // claims won, from the workers' own records
	WorkedTwice  int        // issues with two or more work records
	Overlapping  int        // issues worked by two workers at the same time
	ClaimCalls   int        // `ready --claim` calls, serialization retries included
	BDCalls      int64
	Busy         int // Next gave up after every try lost a race
	ClaimWall    time.Duration
	MergeLatency []time.Duration
	MergeWall    time.Duration
	MergeOK      int
}

// measureWorkers runs both figures.
func measureWorkers(ctx context.Context, e *benchEnv, claims int, say func(string, ...any)) (*workersResult, error) {
	w := &workersResult{Claims: claims}
	say("workers: %d claims by %d workers across two clones sharing one tracker", claims, benchWorkers)
	if err := measureClaims(ctx, e, w); err != nil {
		return nil, fmt.Errorf("claims: %w", err)
	}
	say("workers: merge queue, %d workers × %d integrations", benchWorkers, mergeRounds)
	if err := measureMergeQueue(ctx, e, w); err != nil {
		return nil, fmt.Errorf("merge queue: %w", err)
	}
	var err error
	if w.Scale, err = measureWorkerScale(ctx, e, say); err != nil {
		return nil, fmt.Errorf("scaling: %w", err)
	}
	return w, nil
}

func runIn(ctx context.Context, env []string, dir, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// measureClaims: two clones of one project share the stand-in's
// server-mode tracker (whose racing claims fail with Dolt's serialization
// failure, as real server mode's do); 4 workers per clone claim through
// internal/beads until nothing is left. Each worker appends "start" and
// "end" lines for the issue it works on to its own record file, and the
// figures are counted from those files.
func measureClaims(ctx context.Context, e *benchEnv, w *workersResult) error {
	root := filepath.Join(e.work, "workers-claims")
	servers := filepath.Join(root, "servers")
	if err := os.MkdirAll(filepath.Join(servers, "127.0.0.1_"+workersSrvPort), 0o755); err != nil {
		return err
	}
	env := e.env("BD_STANDIN_SERVER_ROOT="+servers, "BD_STANDIN_TXN_WINDOW=2ms")
	a, b := filepath.Join(root, "clone-a"), filepath.Join(root, "clone-b")
	if err := os.MkdirAll(a, 0o755); err != nil {
		return err
	}
	steps := []struct {
		dir  string
		name string
		args []string
	}{
		{a, "git", []string{"init", "-q"}},
		{a, e.bd(), []string{"init", "--prefix", "wk", "--quiet", "--server", "--server-host", "127.0.0.1", "--server-port", workersSrvPort, "--external"}},
		{a, "git", []string{"add", "-A"}},
		{a, "git", []string{"commit", "-q", "-m", "bd init"}},
		{root, "git", []string{"clone", "-q", a, b}},
	}
	for _, s := range steps {
		if err := runIn(ctx, env, s.dir, s.name, s.args...); err != nil {
			return err
		}
	}
	for i := 0; i < w.Claims; i++ {
		if err := runIn(ctx, env, a, e.bd(), "--quiet", "create", fmt.Sprintf("Bench issue %d", i), "--silent"); err != nil {
			return err
		}
	}
	records := filepath.Join(root, "records")
	if err := os.MkdirAll(records, 0o755); err != nil {
		return err
	}
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < benchWorkers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dir := []string{a, b}[i%2]
			actor := fmt.Sprintf("ralphd/clone-%c/w%d", "ab"[i%2], i)
			client := &beads.Client{Bin: e.bd(), Dir: dir, Env: env, Actor: actor, Timeout: 2 * time.Minute}
			cl := &beads.Claimer{Tracker: client, Actor: actor, BaseDelay: 5 * time.Millisecond, MaxDelay: 100 * time.Millisecond}
			rec, err := os.Create(filepath.Join(records, fmt.Sprintf("w%d", i)))
			if err != nil {
				mu.Lock()
				firstErr = err
				mu.Unlock()
				return
			}
			defer rec.Close()
			fail := func(err error) {
				mu.Lock()
				if firstErr == nil {
					firstErr = fmt.Errorf("%s: %w", actor, err)
				}
				mu.Unlock()
			}
			for {
				res, err := cl.Next(ctx)
				mu.Lock()
				w.ClaimCalls += res.Tries
				if res.Outcome == beads.Busy {
					w.Busy++
				}
				mu.Unlock()
				if err != nil {
					fail(err)
					return
				}
				if res.Outcome == beads.Empty {
					break
				}
				if res.Outcome != beads.Won {
					continue
				}
				fmt.Fprintf(rec, "start %s %d\n", res.Issue.ID, time.Now().UnixNano())
				fmt.Fprintf(rec, "end %s %d\n", res.Issue.ID, time.Now().UnixNano())
				if _, err := client.Close(ctx, res.Issue.ID, "bench"); err != nil {
					fail(err)
					return
				}
			}
			mu.Lock()
			w.BDCalls += client.Calls()
			mu.Unlock()
		}()
	}
	wg.Wait()
	w.ClaimWall = time.Since(start)
	if firstErr != nil {
		return firstErr
	}
	return countRecords(records, w)
}

// interval is one worker's work on one issue.
type interval struct {
	worker     string
	start, end int64
}

// countRecords reads the workers' record files.
func countRecords(dir string, w *workersResult) error {
	files, err := filepath.Glob(filepath.Join(dir, "w*"))
	if err != nil {
		return err
	}
	byIssue := map[string][]interval{}
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		open := map[string]int64{}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var kind, id string
			var at int64
			if _, err := fmt.Sscanf(sc.Text(), "%s %s %d", &kind, &id, &at); err != nil {
				f.Close()
				return fmt.Errorf("%s: %q: %w", p, sc.Text(), err)
			}
			if kind == "start" {
				open[id] = at
				continue
			}
			byIssue[id] = append(byIssue[id], interval{filepath.Base(p), open[id], at})
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return err
		}
	}
	for _, ivs := range byIssue {
		w.Won += len(ivs)
		if len(ivs) > 1 {
			w.WorkedTwice++
		}
		slices.SortFunc(ivs, func(x, y interval) int { return int(x.start - y.start) })
		for i := 1; i < len(ivs); i++ {
			if ivs[i].start <= ivs[i-1].end {
				w.Overlapping++
				break
			}
		}
	}
	return nil
}

// measureMergeQueue: a project with main checked out and 8 worker
// worktrees; each worker makes mergeRounds commits of its own files and
// hands each to one shared queue at once, so the queue is always busy.
// Latency runs from the hand-over (where the iteration closed its issue)
// to the commit being on main; verify is `sh -c true` in the worktree.
func measureMergeQueue(ctx context.Context, e *benchEnv, w *workersResult) error {
	repo := filepath.Join(e.work, "workers-merge", "project")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		return err
	}
	env := e.env()
	if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte("bench\n"), 0o644); err != nil {
		return err
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "base"}} {
		if err := runIn(ctx, env, repo, "git", args...); err != nil {
			return err
		}
	}
	// The queue's git runs in this process: give it the bench identity.
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && (strings.HasPrefix(k, "GIT_") || k == "HOME") {
			os.Setenv(k, v)
		}
	}
	wt := &git.Manager{Repo: repo, Root: filepath.Join(e.work, "workers-merge", "worktrees")}
	q := &mergeq.Queue{Repo: repo, Target: "main", Verify: func(ctx context.Context, dir string) error {
		return runIn(ctx, env, dir, "sh", "-c", "true")
	}}
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < benchWorkers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			worker := fmt.Sprintf("w%d", i)
			fail := func(err error) {
				mu.Lock()
				if firstErr == nil {
					firstErr = fmt.Errorf("%s: %w", worker, err)
				}
				mu.Unlock()
			}
			for r := 0; r < mergeRounds; r++ {
				tr, _, err := wt.Open(ctx, worker, "main")
				if err != nil {
					fail(err)
					return
				}
				name := fmt.Sprintf("%s-%d.txt", worker, r)
				if err := os.WriteFile(filepath.Join(tr.Dir, name), []byte(name+"\n"), 0o644); err != nil {
					fail(err)
					return
				}
				if err := runIn(ctx, env, tr.Dir, "git", "add", name); err == nil {
					err = runIn(ctx, env, tr.Dir, "git", "commit", "-q", "-m", name)
					if err != nil {
						fail(err)
						return
					}
				}
				handed := time.Now()
				res, err := q.Integrate(ctx, mergeq.Request{Worker: worker, Issue: name, Dir: tr.Dir, Branch: tr.Branch})
				took := time.Since(handed)
				if err != nil {
					fail(err)
					return
				}
				mu.Lock()
				if res.Integrated {
					w.MergeOK++
					w.MergeLatency = append(w.MergeLatency, took)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	w.MergeWall = time.Since(start)
	return firstErr
}

// quantile returns the q-quantile (nearest rank) of ds.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}

func workersSection(w *workersResult) bench.Section {
	s := bench.Section{Title: "6. Parallel workers (claims and the merge queue)"}
	claimCmd := fmt.Sprintf("ralphbench -only workers -claims %d   # 8 internal/beads workers, 4 in each of two clones sharing the stand-in's server-mode tracker", w.Claims)
	mergeCmd := fmt.Sprintf("ralphbench -only workers   # 8 workers × %d commits handed to one internal/mergeq queue at once; verify is `sh -c true`", mergeRounds)
	s.Figures = []bench.Figure{
		{
			ID:      "6a",
			Name:    "issues worked by two workers at once, from the workers' own records (8 workers, two clones, one tracker)",
			Value:   fmt.Sprintf("%d of %d claims (%d issues worked twice at all)", w.Overlapping, w.Won, w.WorkedTwice),
			Goal:    "0 over ≥ 1,000 claims",
			Verdict: bench.Judge(w.Overlapping == 0 && w.WorkedTwice == 0 && w.Won >= 1000),
			Command: claimCmd,
		},
		{
			ID:      "6b",
			Name:    "`bd ready --claim` calls per claim won (serialization-failure retries included)",
			Value:   fmt.Sprintf("%.2f (%d calls for %d claims; %d give-ups after every retry lost)", bench.Ratio(float64(w.ClaimCalls), float64(w.Won)), w.ClaimCalls, w.Won, w.Busy),
			Command: claimCmd,
		},
		{
			ID:      "6c",
			Name:    "bd calls per claimed issue by the claim layer and the worker (claim, read-back, close)",
			Value:   fmt.Sprintf("%.2f (%d calls ÷ %d issues)", bench.Ratio(float64(w.BDCalls), float64(w.Won)), w.BDCalls, w.Won),
			Command: claimCmd,
		},
		{
			ID:      "6d",
			Name:    "merge queue: hand-over to commit on the target, 8 workers at once",
			Value:   fmt.Sprintf("median %s, p95 %s (%d integrations in %s)", fmtDur(quantile(w.MergeLatency, 0.5)), fmtDur(quantile(w.MergeLatency, 0.95)), w.MergeOK, fmtDur(w.MergeWall)),
			Command: mergeCmd,
		},
	}
	s.Figures = append(s.Figures, scaleFigures(w.Scale)...)
	s.Body = fmt.Sprintf(`**Method.** 6a-6c: the stand-in's server mode keeps one store for both clones under its file lock, and a
claim that races another fails with Dolt's recorded "Error 1213" serialization failure, as real server mode's
do; internal/beads retries those with jittered backoff and reads every claim back. Each worker writes a start and
an end line to its own file for each issue it works on; 6a counts issues with two records, and with two records
whose times overlap, from those files. The claims took %s in all. 6d: each worker hands its branch over (its tip
becomes the work), the queue checks that commit out in its own worktree, rebases it onto main, runs verify there
and fast-forwards main's checkout; with 8 workers handing over at once a
hand-over waits for the ones ahead of it, so the median is mostly queueing; each integration holds the queue for
%s on average (wall time ÷ integrations). 6e-6f: `+"`ralphd build 0 --workers K`"+` over copies of one
40-issue project, K = 1 then K = 8, bd recorded by bdrec and git not (a recorder in front of each git call would
weigh on K = 8, which makes more git calls per iteration, more than on K = 1); 6f counts the bd calls whose parent
is ralphd (the agents' calls come through the guard and are not counted).
`, fmtDur(w.ClaimWall), fmtDur(time.Duration(int64(w.MergeWall)/int64(max(1, w.MergeOK))))) + "\n" + scaleBody(w.Scale)
	return s
}
