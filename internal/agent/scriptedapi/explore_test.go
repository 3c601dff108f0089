package scriptedapi

import (
	"bytes"
	"fmt"
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

func runExplore(t *testing.T, srv *Server, prompt string, extra ...string) {
	bin, err := FindClaude(".")
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-p", "--output-format", "stream-json", "--verbose", "--allowedTools=Bash")
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}, srv.Env()...)
	if os.Getenv("EXPLORE_NOKEY") != "" {
		cmd.Env = cmd.Env[:3]
	}
	cmd.Env = append(cmd.Env, extra...)
	cmd.Stdin = strings.NewReader(prompt)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out, errb bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &errb
	start := time.Now()
	err = cmd.Run()
	t.Logf("elapsed %v err=%v exit=%d", time.Since(start), err, cmd.ProcessState.ExitCode())
	for _, l := range strings.Split(out.String(), "\n") {
		if len(l) > 1500 {
			l = l[:1500]
		}
		t.Logf("OUT %s", l)
	}
	t.Logf("STDERR %s", errb.String())
	for _, r := range srv.Requests() {
		t.Logf("REQ #%d %s %s?%s kind=%s script=%s turn=%d model=%v max_tokens=%v stream=%v retry=%s prompt=%.60q", r.Seq, r.Method, r.Path, r.RawQuery, r.Kind, r.Script, r.Turn, r.Body["model"], r.Body["max_tokens"], r.Body["stream"], r.Header.Get("X-Stainless-Retry-Count"), r.Prompt)
	}
	for _, e := range srv.Errors() {
		t.Logf("ERR %v", e)
	}
	t.Logf("TOOLRESULTS %+v", srv.ToolResults())
}

func TestExplore(t *testing.T) {
	mode := os.Getenv("EXPLORE")
	if mode == "" {
		t.Skip()
	}
	var sc Script
	var extra []string
	switch mode {
	case "tool":
		sc = Script{Turns: []Turn{Bash("echo hi > "+t.TempDir()+"/x; echo done").Saying("Let me run it."), Say("All done").Expect(Contains("done"))}}
	case "401":
		sc = Script{Turns: []Turn{Fail(InvalidKey())}, RepeatLast: true}
	case "429":
		sc = Script{Turns: []Turn{Fail(RateLimited(0)), Say("after 429")}}
	case "429always":
		sc = Script{Turns: []Turn{Fail(RateLimited(0))}, RepeatLast: true}
	case "429long":
		sc = Script{Turns: []Turn{Fail(RateLimited(120 * time.Second))}, RepeatLast: true}
	case "529":
		sc = Script{Turns: []Turn{Fail(Overloaded())}, RepeatLast: true}
	case "500":
		sc = Script{Turns: []Turn{Fail(ServerError())}, RepeatLast: true}
	case "401nr":
		sc = Script{Turns: []Turn{Fail(InvalidKey().NoRetry())}, RepeatLast: true}
	case "unified":
		f := RateLimited(3600 * time.Second)
		f.Header.Set("anthropic-ratelimit-unified-status", "rejected")
		f.Header.Set("anthropic-ratelimit-unified-reset", fmt.Sprint(time.Now().Add(time.Hour).Unix()))
		f.Header.Set("anthropic-ratelimit-unified-representative-claim", "five_hour")
		sc = Script{Turns: []Turn{Fail(f)}, RepeatLast: true}
	case "unifiedok":
		f := RateLimited(3600 * time.Second)
		f.Header.Set("anthropic-ratelimit-unified-status", "rejected")
		f.Header.Set("anthropic-ratelimit-unified-reset", fmt.Sprint(time.Now().Add(time.Hour).Unix()))
		f.Header.Set("anthropic-ratelimit-unified-representative-claim", "five_hour")
		sc = Script{Turns: []Turn{Fail(f), Say("after")}}
	case "norestry":
		sc = Script{Turns: []Turn{Fail(RateLimited(0).NoRetry())}, RepeatLast: true}
	case "hang":
		sc = Script{Turns: []Turn{Fail(Hang())}, RepeatLast: true}
	}
	if v := os.Getenv("EXTRA"); v != "" {
		extra = strings.Split(v, " ")
	}
	srv := New(sc)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	runExplore(t, srv, "do the thing for issue ab-12", extra...)
	dumpSide(t, srv)
}

func dumpSide(t *testing.T, srv *Server) {
	for _, r := range srv.Requests() {
		if r.Kind != KindSide {
			continue
		}
		b := r.Body
		t.Logf("SIDE headers=%v", r.Header)
		for k, v := range b {
			s := fmt.Sprint(v)
			if len(s) > 1200 {
				s = s[:1200]
			}
			t.Logf("SIDE %s = %s", k, s)
		}
	}
}
