// Package gitearunner is a scripted Gitea Actions runner for the tests:
// a real client of Gitea's runner protocol (runner.v1 over Connect, what
// act_runner speaks), so that a real Gitea (internal/testkit/giteaserver)
// runs real Actions jobs whose logs and results are Gitea's own. Only the
// runner is scripted: it runs each step's `run:` script on the host with
// sh, in a checkout of the job's commit, in a process group of its own
// under a context, or, where the test scripts one, a scripted outcome.
// No container, no `uses:` actions: a `uses:` step fails, saying so.
//
// A Runner registers with a registration token (Gitea's
// .../actions/runners/registration-token), declares its labels, fetches
// tasks (FetchTask), streams each step's output as log rows (UpdateLog)
// and reports each step's and the job's result (UpdateTask).
package gitearunner

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	runnerv1 "code.gitea.io/actions-proto-go/runner/v1"
	"code.gitea.io/actions-proto-go/runner/v1/runnerv1connect"
	"connectrpc.com/connect"
	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ralphd/ralphd/internal/proc"
)

// Version is what the runner tells Gitea it is.
const Version = "ralphd-gitearunner"

// Step is one step of a job as Gitea sent it.
type Step struct {
	// Job is the job's id in the workflow, Name the step's name (or "").
	Job, Name string
	// Run is its `run:` script, Uses its `uses:` action (one is set).
	Run, Uses string
}

// Outcome is a scripted step's result: its log lines and whether it
// passed.
type Outcome struct {
	Lines []string
	OK    bool
}

// Runner is a runner registered with a Gitea.
type Runner struct {
	// Script, when set, is asked first for each step: a scripted outcome
	// (ok true) stands for the step, else the step's `run:` runs.
	Script func(Step) (Outcome, bool)
	// StepTimeout bounds one step; zero means a minute.
	StepTimeout time.Duration

	client       runnerv1connect.RunnerServiceClient
	server       string
	tasksVersion int64

	mu   sync.Mutex
	done []int64
}

// Register registers a runner called name with labels (the runs-on
// names it takes: Gitea 1.27 matches a job's runs-on against them as
// they are, so no act_runner ":host" suffix) at the Gitea at serverURL,
// with a registration token, and declares its labels.
func Register(ctx context.Context, serverURL, regToken, name string, labels []string) (*Runner, error) {
	base := strings.TrimRight(serverURL, "/") + "/api/actions"
	anon := runnerv1connect.NewRunnerServiceClient(http.DefaultClient, base)
	res, err := anon.Register(ctx, connect.NewRequest(&runnerv1.RegisterRequest{
		Name: name, Token: regToken, Version: Version, Labels: labels,
	}))
	if err != nil {
		return nil, fmt.Errorf("register runner %s at %s: %w", name, serverURL, err)
	}
	uuid, token := res.Msg.GetRunner().GetUuid(), res.Msg.GetRunner().GetToken()
	auth := connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			req.Header().Set("x-runner-uuid", uuid)
			req.Header().Set("x-runner-token", token)
			return next(ctx, req)
		}
	})
	r := &Runner{
		client: runnerv1connect.NewRunnerServiceClient(http.DefaultClient, base, connect.WithInterceptors(auth)),
		server: strings.TrimRight(serverURL, "/"),
	}
	if _, err := r.client.Declare(ctx, connect.NewRequest(&runnerv1.DeclareRequest{Version: Version, Labels: labels})); err != nil {
		return nil, fmt.Errorf("declare runner %s's labels: %w", name, err)
	}
	return r, nil
}

// Serve fetches and runs tasks, one at a time, every interval, until ctx
// ends; it returns the first error of the protocol (not of a job, which
// is the job's result).
func (r *Runner) Serve(ctx context.Context, interval time.Duration) error {
	for {
		ran, err := r.Once(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if ran {
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// Done lists the ids of the tasks the runner finished and reported, in
// order.
func (r *Runner) Done() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int64(nil), r.done...)
}

// Once fetches one task and runs it, reporting whether there was one.
func (r *Runner) Once(ctx context.Context) (bool, error) {
	res, err := r.client.FetchTask(ctx, connect.NewRequest(&runnerv1.FetchTaskRequest{TasksVersion: r.tasksVersion}))
	if err != nil {
		return false, fmt.Errorf("fetch a task: %w", err)
	}
	r.tasksVersion = res.Msg.GetTasksVersion()
	task := res.Msg.GetTask()
	if task == nil {
		return false, nil
	}
	// A task was picked: the next fetch must ask again.
	r.tasksVersion = 0
	if err := r.run(ctx, task); err != nil {
		return true, fmt.Errorf("task %d: %w", task.GetId(), err)
	}
	return true, nil
}

// workflow is the part of the single-job workflow Gitea sends that the
// runner reads.
type workflow struct {
	Jobs map[string]struct {
		Steps []struct {
			Name string `yaml:"name"`
			Run  string `yaml:"run"`
			Uses string `yaml:"uses"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// ParseSteps reads the steps of the one job in a task's workflow payload.
func ParseSteps(payload []byte) ([]Step, error) {
	var w workflow
	if err := yaml.Unmarshal(payload, &w); err != nil {
		return nil, fmt.Errorf("the task's workflow: %w", err)
	}
	if len(w.Jobs) != 1 {
		return nil, fmt.Errorf("the task's workflow has %d jobs, want 1", len(w.Jobs))
	}
	var steps []Step
	for id, j := range w.Jobs {
		for _, s := range j.Steps {
			steps = append(steps, Step{Job: id, Name: s.Name, Run: s.Run, Uses: s.Uses})
		}
	}
	return steps, nil
}

// run runs a task's steps, streaming their logs, and reports its result.
func (r *Runner) run(ctx context.Context, task *runnerv1.Task) error {
	started := timestamppb.Now()
	lg := &logStream{r: r, task: task.GetId()}
	state := &runnerv1.TaskState{Id: task.GetId(), StartedAt: started}
	steps, err := ParseSteps(task.GetWorkflowPayload())
	if err != nil {
		lg.add(err.Error())
		state.Result = runnerv1.Result_RESULT_FAILURE
		return r.finish(ctx, lg, state)
	}
	dir, err := os.MkdirTemp("", "ralphd-gitearunner-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	c := task.GetContext().GetFields()
	str := func(k string) string { return c[k].GetStringValue() }
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "CI=true", "GITHUB_ACTIONS=true", "GITEA_ACTIONS=true",
		"GITHUB_SHA=" + str("sha"), "GITHUB_REPOSITORY=" + str("repository"), "GITHUB_WORKSPACE=" + filepath.Join(dir, "work"),
	}
	work := filepath.Join(dir, "work")
	checkout := r.checkout(ctx, work, str("repository"), str("sha"), str("token"))
	if checkout != nil {
		lg.add("gitearunner: no checkout of " + str("sha") + " (" + checkout.Error() + "): steps run in an empty directory")
		if err := os.MkdirAll(work, 0o755); err != nil {
			return err
		}
	}
	result := runnerv1.Result_RESULT_SUCCESS
	for i, s := range steps {
		st := &runnerv1.StepState{Id: int64(i), StartedAt: timestamppb.Now(), LogIndex: lg.len()}
		if result != runnerv1.Result_RESULT_SUCCESS {
			st.Result = runnerv1.Result_RESULT_SKIPPED
		} else {
			ok := r.step(ctx, lg, s, work, env)
			st.Result = runnerv1.Result_RESULT_SUCCESS
			if !ok {
				st.Result, result = runnerv1.Result_RESULT_FAILURE, runnerv1.Result_RESULT_FAILURE
			}
		}
		st.StoppedAt, st.LogLength = timestamppb.Now(), lg.len()-st.LogIndex
		state.Steps = append(state.Steps, st)
		if err := lg.flush(ctx, false); err != nil {
			return err
		}
		if _, err := r.client.UpdateTask(ctx, connect.NewRequest(&runnerv1.UpdateTaskRequest{State: state})); err != nil {
			return fmt.Errorf("report step %d: %w", i, err)
		}
	}
	state.Result = result
	return r.finish(ctx, lg, state)
}

// finish sends the rest of the log and the job's result.
func (r *Runner) finish(ctx context.Context, lg *logStream, state *runnerv1.TaskState) error {
	if err := lg.flush(ctx, true); err != nil {
		return err
	}
	state.StoppedAt = timestamppb.Now()
	// Listed as done before the report: the commit status the report
	// sets is never seen before Done lists the task.
	r.mu.Lock()
	r.done = append(r.done, state.GetId())
	r.mu.Unlock()
	if _, err := r.client.UpdateTask(ctx, connect.NewRequest(&runnerv1.UpdateTaskRequest{State: state})); err != nil {
		r.mu.Lock()
		r.done = r.done[:len(r.done)-1]
		r.mu.Unlock()
		return fmt.Errorf("report the result: %w", err)
	}
	return nil
}

// checkout fetches sha of repo into dir with the task's token, as
// actions/checkout does (Gitea takes a running task's token as a git
// password).
func (r *Runner) checkout(ctx context.Context, dir, repo, sha, token string) error {
	if repo == "" || sha == "" {
		return errors.New("the task names no repository or commit")
	}
	url := strings.Replace(r.server, "://", "://gitea-actions:"+token+"@", 1) + "/" + repo + ".git"
	for _, args := range [][]string{{"init", "-q", dir}, {"-C", dir, "fetch", "-q", "--depth=1", url, sha}, {"-C", dir, "checkout", "-q", "FETCH_HEAD"}} {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		cmd := proc.Command(ctx, time.Second, "git", args...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Dir(dir), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0"}
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			return fmt.Errorf("git %s: %w: %s", args[len(args)-2], err, strings.ReplaceAll(string(bytes.TrimSpace(out)), token, "***"))
		}
	}
	return nil
}

// step runs one step, its output into the log, and says whether it
// passed.
func (r *Runner) step(ctx context.Context, lg *logStream, s Step, work string, env []string) bool {
	if r.Script != nil {
		if o, ok := r.Script(s); ok {
			for _, l := range o.Lines {
				lg.add(l)
			}
			return o.OK
		}
	}
	if s.Run == "" {
		lg.add(fmt.Sprintf("gitearunner: step %q: only run: steps run here (uses: %s)", s.Name, s.Uses))
		return false
	}
	timeout := r.StepTimeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := proc.Command(ctx, time.Second, "sh", "-e", "-c", s.Run)
	cmd.Dir, cmd.Env = work, env
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			lg.add(sc.Text())
			_ = lg.flush(ctx, false) // streamed as it comes; the step's end flushes again
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	err := cmd.Run()
	_ = pw.Close()
	<-read
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			lg.add(fmt.Sprintf("Process completed with exit code %d.", ee.ExitCode()))
		} else {
			lg.add("gitearunner: " + err.Error())
		}
		return false
	}
	return true
}

// logStream is a task's log: rows gathered, sent with UpdateLog from the
// first row Gitea has not acknowledged.
type logStream struct {
	r    *Runner
	task int64

	mu   sync.Mutex
	rows []*runnerv1.LogRow
	ack  int64
}

func (l *logStream) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rows = append(l.rows, &runnerv1.LogRow{Time: timestamppb.Now(), Content: line})
}

func (l *logStream) len() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int64(len(l.rows))
}

// flush sends the rows Gitea has not acknowledged; noMore ends the log.
func (l *logStream) flush(ctx context.Context, noMore bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ack == int64(len(l.rows)) && !noMore {
		return nil
	}
	res, err := l.r.client.UpdateLog(ctx, connect.NewRequest(&runnerv1.UpdateLogRequest{
		TaskId: l.task, Index: l.ack, Rows: l.rows[l.ack:], NoMore: noMore,
	}))
	if err != nil {
		return fmt.Errorf("send task %d's log: %w", l.task, err)
	}
	l.ack = res.Msg.GetAckIndex()
	if l.ack != int64(len(l.rows)) {
		return fmt.Errorf("send task %d's log: Gitea acknowledged %d rows of %d", l.task, l.ack, len(l.rows))
	}
	return nil
}
