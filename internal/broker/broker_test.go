package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"
)

// start runs a server with h for the test; the test process itself is the
// agent's leader unless leader says otherwise.
func start(t *testing.T, h Handler) *Server {
	t.Helper()
	s, err := Listen(t.TempDir(), h)
	if err != nil {
		t.Fatal(err)
	}
	s.SetLeader(os.Getpid())
	go s.Serve(context.Background())
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func getenvOf(s *Server) func(string) string {
	_, v, _ := strings.Cut(s.EnvVar(), "=")
	return func(k string) string {
		if k == Env {
			return v
		}
		return ""
	}
}

func call(s *Server, getenv func(string) string, stdin io.Reader, args ...string) (string, string, int) {
	var out, errb bytes.Buffer
	code := RunClient(args, getenv, stdin, &out, &errb)
	return out.String(), errb.String(), code
}

// Stdout, stderr and the exit code come back byte for byte, with the
// argv, the working directory and stdin delivered as sent.
func TestRoundTrip(t *testing.T) {
	is := is.New(t)
	var got Call
	big := bytes.Repeat([]byte("0123456789abcdef\x00\xff\n"), 20000) // several frames
	s := start(t, func(_ context.Context, c Call, stdin io.Reader, stdout, stderr io.Writer) int {
		got = c
		in, _ := io.ReadAll(stdin)
		_, _ = stdout.Write(in)
		_, _ = stdout.Write(big)
		_, _ = stderr.Write([]byte("warn: \x1b[31mred\x1b[0m\n"))
		return 42
	})
	out, errs, code := call(s, getenvOf(s), strings.NewReader("from stdin\n"), "update", "x-1", "--notes", "a b\nc")
	is.Equal(code, 42)
	is.Equal(out, "from stdin\n"+string(big))
	is.Equal(errs, "warn: \x1b[31mred\x1b[0m\n")
	is.Equal(got.Argv, []string{"update", "x-1", "--notes", "a b\nc"})
	wd, _ := os.Getwd()
	is.Equal(got.Dir, wd)
	is.Equal(got.PID, os.Getpid())
}

// A fast agent calls bd before ralphd has heard its pid back from the
// start: the call waits for the leader instead of being refused, and is
// then judged like any other, so a call made before the start is still
// refused when the leader turns out to be another process.
func TestCallBeforeLeaderKnown(t *testing.T) {
	h := func(context.Context, Call, io.Reader, io.Writer, io.Writer) int { return 7 }
	listen := func(t *testing.T) *Server {
		s, err := Listen(t.TempDir(), h)
		if err != nil {
			t.Fatal(err)
		}
		go s.Serve(context.Background())
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	for _, tc := range []struct {
		name   string
		leader func(t *testing.T) int
		want   int
	}{
		{"its own agent", func(*testing.T) int { return os.Getpid() }, 7},
		{"another process", func(t *testing.T) int {
			sleeper := exec.Command("sleep", "30")
			if err := sleeper.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })
			return sleeper.Process.Pid
		}, ExitRefused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			s := listen(t)
			pid := tc.leader(t)
			done := make(chan int, 1)
			go func() { _, _, code := call(s, getenvOf(s), nil, "list"); done <- code }()
			select {
			case code := <-done:
				t.Fatalf("the call ended (exit %d) before the leader was known", code)
			case <-time.After(200 * time.Millisecond):
			}
			s.SetLeader(pid)
			is.Equal(<-done, tc.want)
		})
	}
}

func TestRefused(t *testing.T) {
	var served atomic.Int32
	h := func(context.Context, Call, io.Reader, io.Writer, io.Writer) int { served.Add(1); return 0 }
	t.Run("wrong token", func(t *testing.T) {
		is := is.New(t)
		s := start(t, h)
		sock, _, _ := strings.Cut(getenvOf(s)(Env), "#")
		_, errs, code := call(s, func(string) string { return sock + "#forged" }, nil, "list")
		is.Equal(code, ExitRefused)
		is.True(strings.Contains(errs, "wrong token"))
	})
	t.Run("another iteration's socket", func(t *testing.T) {
		is := is.New(t)
		mine, other := start(t, h), start(t, h)
		sock, _, _ := strings.Cut(getenvOf(other)(Env), "#")
		_, token, _ := strings.Cut(getenvOf(mine)(Env), "#")
		_, errs, code := call(other, func(string) string { return sock + "#" + token }, nil, "list")
		is.Equal(code, ExitRefused)
		is.True(strings.Contains(errs, "wrong token"))
	})
	t.Run("not the agent's process", func(t *testing.T) {
		is := is.New(t)
		s := start(t, h)
		sleeper := exec.Command("sleep", "30")
		is.NoErr(sleeper.Start())
		defer func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() }()
		s.SetLeader(sleeper.Process.Pid) // the test process does not descend from it
		_, errs, code := call(s, getenvOf(s), nil, "list")
		is.Equal(code, ExitRefused)
		is.True(strings.Contains(errs, "is not part of this iteration's agent"))
	})
	t.Run("agent not started", func(t *testing.T) {
		is := is.New(t)
		s := start(t, h)
		s.SetLeader(0)
		_, _, code := call(s, getenvOf(s), nil, "list")
		is.Equal(code, ExitRefused)
	})
	t.Run("iteration over", func(t *testing.T) {
		is := is.New(t)
		s := start(t, h)
		getenv := getenvOf(s)
		is.NoErr(s.Close())
		_, errs, code := call(s, getenv, nil, "list")
		is.Equal(code, ExitRefused)
		is.True(strings.Contains(errs, "the iteration that started this agent has ended"))
		_, err := os.Stat(s.Dir())
		is.True(os.IsNotExist(err)) // the socket's dir is gone
	})
	t.Run("no broker", func(t *testing.T) {
		is := is.New(t)
		_, errs, code := call(nil, func(string) string { return "" }, nil, "list")
		is.Equal(code, ExitRefused)
		is.True(strings.Contains(errs, Env+" is not set"))
	})
	is.New(t).Equal(served.Load(), int32(0)) // no refused call reached the handler
}

// A client that goes away cancels its call; Close ends calls in flight.
func TestCancel(t *testing.T) {
	is := is.New(t)
	cancelled := make(chan struct{})
	s := start(t, func(ctx context.Context, _ Call, _ io.Reader, _, _ io.Writer) int {
		<-ctx.Done()
		close(cancelled)
		return 143
	})
	go call(s, getenvOf(s), nil, "list")
	time.Sleep(100 * time.Millisecond)
	done := make(chan error)
	go func() { done <- s.Close() }()
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the call in flight was not cancelled")
	}
	is.NoErr(<-done)
}

// A client whose stdin stays open still gets its answer.
func TestStdinLeftOpen(t *testing.T) {
	is := is.New(t)
	s := start(t, func(_ context.Context, _ Call, _ io.Reader, stdout, _ io.Writer) int {
		_, _ = stdout.Write([]byte("ok\n"))
		return 0
	})
	r, w := io.Pipe()
	defer w.Close()
	out, _, code := call(s, getenvOf(s), r, "list")
	is.Equal(code, 0)
	is.Equal(out, "ok\n")
}

func FuzzReadFrame(f *testing.F) {
	var b bytes.Buffer
	_ = writeFrame(&b, frameHello, []byte(`{"token":"x"}`))
	f.Add(b.Bytes())
	f.Add([]byte{'x', 0, 0, 0, 4, 0, 0, 0, 1})
	f.Add([]byte{'o', 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		for {
			typ, p, err := readFrame(r, maxData)
			if err != nil {
				return
			}
			if len(p) > maxData {
				t.Fatalf("frame of %d bytes past the limit", len(p))
			}
			if typ == frameExit {
				_, _ = parseExit(p)
			}
		}
	})
}

// TestMain lets the test binary be the client: `<test binary> client ARGS…`.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "client" {
		os.Exit(RunClient(os.Args[2:], os.Getenv, os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// An agent's own child is served; a process it detached (a double fork,
// re-parented away from the agent) is refused, even with the right token.
func TestDetachedProcessRefused(t *testing.T) {
	is := is.New(t)
	s := start(t, func(_ context.Context, _ Call, _ io.Reader, stdout, _ io.Writer) int {
		_, _ = stdout.Write([]byte("served\n"))
		return 0
	})
	self, err := os.Executable()
	is.NoErr(err)
	dir := t.TempDir()
	agent := exec.Command("sh", "-c", `
"$SELF" client list > "$DIR/child.out" 2>&1; echo $? > "$DIR/child.code"
( setsid sh -c 'sleep 0.3; "$SELF" client list > "$DIR/detached.out" 2>&1; echo $? > "$DIR/detached.code"' & )
sleep 1`)
	agent.Env = append(os.Environ(), s.EnvVar(), "SELF="+self, "DIR="+dir)
	is.NoErr(agent.Start())
	s.SetLeader(agent.Process.Pid)
	is.NoErr(agent.Wait())
	read := func(name string) string {
		for range 50 {
			if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil && len(b) > 0 {
				return string(b)
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("%s was never written", name)
		return ""
	}
	is.Equal(read("child.code"), "0\n")
	is.Equal(read("child.out"), "served\n")
	is.Equal(read("detached.code"), "1\n")
	is.True(strings.Contains(read("detached.out"), "is not part of this iteration's agent"))
}

// FuzzServeHello sends the server any hello payload (with @TOKEN@ in it
// standing for the iteration's real token) and any bytes after it, as an
// agent's process can. The server always answers with exactly one exit
// frame, and serves the call only when the hello decodes with the right
// token and an absolute directory that exists, with the argv and
// directory it decoded.
func FuzzServeHello(f *testing.F) {
	type served struct {
		call Call
		ok   bool
	}
	got := make(chan served, 1)
	s, err := Listen(f.TempDir(), func(_ context.Context, c Call, stdin io.Reader, stdout, _ io.Writer) int {
		_, _ = io.Copy(io.Discard, stdin)
		got <- served{c, true}
		return 7
	})
	if err != nil {
		f.Fatal(err)
	}
	s.SetLeader(os.Getpid())
	go s.Serve(context.Background())
	f.Cleanup(func() { _ = s.Close() })
	sock, token, _ := strings.Cut(getenvOf(s)(Env), "#")
	wd, _ := os.Getwd()

	var eof bytes.Buffer
	_ = writeFrame(&eof, frameStdin, []byte("in"))
	_ = writeFrame(&eof, frameStdinEOF, nil)
	for _, h := range []string{
		`{"token":"@TOKEN@","argv":["list"],"dir":"` + wd + `"}`,
		`{"token":"@TOKEN@","argv":["list"],"dir":"relative"}`,
		`{"token":"@TOKEN@x","argv":[],"dir":"/"}`,
		`{"token":"","dir":"/"}`, `{"Token":"@TOKEN@","DIR":"/","argv":["--help"]}`,
		`{"token":"x","token":"@TOKEN@","dir":"/tmp"}`, `null`, ``, `{"token":"@TOKEN@","dir":"/etc/passwd"}`,
	} {
		f.Add([]byte(h), eof.Bytes())
	}
	f.Fuzz(func(t *testing.T, payload, rest []byte) {
		payload = bytes.ReplaceAll(payload, []byte("@TOKEN@"), []byte(token))
		conn, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		if err := writeFrame(conn, frameHello, payload); err != nil {
			t.Fatal(err)
		}
		_, _ = conn.Write(rest)
		_ = conn.(*net.UnixConn).CloseWrite()
		exits := 0
		for {
			typ, p, err := readFrame(conn, maxData)
			if err != nil {
				if errors.Is(err, os.ErrDeadlineExceeded) {
					t.Fatal("the server did not answer")
				}
				break
			}
			if typ == frameExit {
				exits++
				if _, err := parseExit(p); err != nil {
					t.Fatal(err)
				}
			}
		}
		if exits != 1 {
			t.Fatalf("%d exit frames", exits)
		}
		var h hello
		want := json.Unmarshal(payload, &h) == nil && h.Token == token && filepath.IsAbs(h.Dir)
		if want {
			fi, serr := os.Stat(h.Dir)
			want = serr == nil && fi.IsDir()
		}
		var c served
		select {
		case c = <-got:
		default:
		}
		if c.ok != want {
			t.Fatalf("served %v, want %v, for hello %q", c.ok, want, payload)
		}
		if c.ok && (!slices.Equal(c.call.Argv, h.Argv) || c.call.Dir != h.Dir) {
			t.Fatalf("served %+v for hello %q", c.call, payload)
		}
	})
}
