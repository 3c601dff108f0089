package broker

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// Env is the variable that tells the client where the broker listens and
// which token to present: "<socket path>#<token>".
const Env = "RALPHD_BD_BROKER"

// ExitRefused is the client's exit code when its call is refused before
// it reaches the policy (bad token, a process outside the iteration, the
// iteration over). bd exits 1 for every error, and so does the guard.
const ExitRefused = 1

// helloTimeout bounds how long a connection may take to say who it is.
const helloTimeout = 10 * time.Second

// Call is one bd call a client sent.
type Call struct {
	Argv []string // the arguments after "bd"
	Dir  string   // the client's working directory
	PID  int      // the client's pid, from SO_PEERCRED
}

// Handler serves one call: it decides it, runs the real bd with stdin,
// stdout and stderr, and returns the exit code. ctx is cancelled when the
// client goes away or the server closes.
type Handler func(ctx context.Context, c Call, stdin io.Reader, stdout, stderr io.Writer) int

// Server listens on one iteration's socket.
type Server struct {
	ln      *net.UnixListener
	dir     string
	token   string
	handler Handler
	leader  atomic.Int64 // the agent's leader pid; 0 until known
	// known is closed by the first SetLeader: a call that arrives while
	// the agent is still starting waits for it.
	known     chan struct{}
	knownOnce sync.Once
	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	// Refused, when set, is told about each connection refused before it
	// reached the handler.
	Refused func(pid int, why string)
}

// hello is the client's first frame.
type hello struct {
	Token string   `json:"token"`
	Argv  []string `json:"argv"`
	Dir   string   `json:"dir"`
}

// Listen makes a private directory (mode 0700) under parent and listens
// on a socket in it. A unix socket's path is limited to about 100 bytes:
// when parent is too deep, the directory goes in the temp dir, or in /tmp.
// Call Serve, then SetLeader once the agent runs, and Close when the
// iteration ends.
func Listen(parent string, h Handler) (*Server, error) {
	var lastErr error
	for _, p := range []string{parent, os.TempDir(), "/tmp"} {
		if len(p)+len("/ralphd-broker-0123456789/bd.sock") > maxSocketPath {
			continue
		}
		dir, err := os.MkdirTemp(p, "ralphd-broker-")
		if err != nil {
			lastErr = err
			continue
		}
		path := filepath.Join(dir, "bd.sock")
		ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("listen on %s: %w", path, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		return &Server{ln: ln, dir: dir, token: rand.Text(), handler: h, ctx: ctx, cancel: cancel, known: make(chan struct{})}, nil
	}
	if lastErr == nil {
		lastErr = fmt.Errorf("no directory with a path short enough for a unix socket (%s)", parent)
	}
	return nil, fmt.Errorf("make the broker's dir: %w", lastErr)
}

// maxSocketPath is the longest socket path used (sun_path holds 108 bytes
// with its terminating NUL).
const maxSocketPath = 104

// Dir is the broker's private directory (the sandbox must let the agent
// reach it).
func (s *Server) Dir() string { return s.dir }

// EnvVar is the environment entry that points the client at this server.
func (s *Server) EnvVar() string {
	return Env + "=" + s.ln.Addr().String() + "#" + s.token
}

// SetLeader tells the server the pid of the agent's leader process: only
// its descendants are served.
func (s *Server) SetLeader(pid int) {
	s.leader.Store(int64(pid))
	if pid != 0 {
		s.knownOnce.Do(func() { close(s.known) })
	}
}

// leaderPID returns the agent's leader pid, waiting up to helloTimeout
// for it: an agent can call bd before the process that started it has
// heard its pid back. It returns 0 if the leader is still unknown.
func (s *Server) leaderPID() int {
	if pid := int(s.leader.Load()); pid != 0 {
		return pid
	}
	t := time.NewTimer(helloTimeout)
	defer t.Stop()
	select {
	case <-s.known:
	case <-s.ctx.Done():
	case <-t.C:
	}
	return int(s.leader.Load())
}

// Serve accepts connections until Close. ctx bounds every call.
func (s *Server) Serve(ctx context.Context) {
	stop := context.AfterFunc(ctx, s.cancel)
	defer stop()
	for {
		conn, err := s.ln.AcceptUnix()
		if err != nil {
			return
		}
		s.wg.Go(func() { s.serve(conn) })
	}
}

// Close stops accepting calls, ends the calls in flight, removes the
// socket and waits for the handlers to return.
func (s *Server) Close() error {
	err := s.ln.Close()
	s.cancel()
	s.wg.Wait()
	if rerr := os.RemoveAll(s.dir); err == nil {
		err = rerr
	}
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

func (s *Server) serve(conn *net.UnixConn) {
	defer conn.Close()
	var mu sync.Mutex
	stderr := frameWriter{mu: &mu, w: conn, typ: frameStderr}
	refuse := func(pid int, why string) {
		if s.Refused != nil {
			s.Refused(pid, why)
		}
		fmt.Fprintf(stderr, "ralphd guard: bd call refused: %s\n", why)
		mu.Lock()
		_ = writeFrame(conn, frameExit, exitPayload(ExitRefused))
		mu.Unlock()
	}
	pid, uid, err := peerCred(conn)
	if err != nil {
		refuse(0, "cannot identify the calling process: "+err.Error())
		return
	}
	_ = conn.SetReadDeadline(time.Now().Add(helloTimeout))
	typ, payload, err := readFrame(conn, maxHello)
	if err != nil || typ != frameHello {
		refuse(pid, "the client did not say hello")
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	var h hello
	if err := json.Unmarshal(payload, &h); err != nil {
		refuse(pid, "unreadable hello: "+err.Error())
		return
	}
	if subtle.ConstantTimeCompare([]byte(h.Token), []byte(s.token)) != 1 {
		refuse(pid, "wrong token: this socket belongs to another iteration")
		return
	}
	if uid != os.Getuid() {
		refuse(pid, fmt.Sprintf("the caller runs as uid %d, not as ralphd's", uid))
		return
	}
	if leader := s.leaderPID(); leader == 0 || !descendsFrom(pid, leader) {
		refuse(pid, fmt.Sprintf("process %d is not part of this iteration's agent", pid))
		return
	}
	if fi, err := os.Stat(h.Dir); err != nil || !fi.IsDir() || !filepath.IsAbs(h.Dir) {
		refuse(pid, fmt.Sprintf("working directory %q is not a directory ralphd can see", h.Dir))
		return
	}

	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	// The real bd reads stdin from an OS pipe, so that it sees EOF and its
	// Wait does not wait for a client that keeps its stdin open.
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		refuse(pid, "make a pipe: "+err.Error())
		return
	}
	defer stdinR.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer stdinW.Close()
		s.pump(conn, stdinW, cancel)
	}()
	stdout := frameWriter{mu: &mu, w: conn, typ: frameStdout}
	code := s.handler(ctx, Call{Argv: h.Argv, Dir: h.Dir, PID: pid}, stdinR, stdout, stderr)
	mu.Lock()
	_ = writeFrame(conn, frameExit, exitPayload(code))
	mu.Unlock()
	// The client hangs up after the exit frame, which ends the pump.
	_ = conn.CloseWrite()
	select {
	case <-done:
	case <-time.After(time.Second):
	}
}

// pump copies the client's stdin frames into w until the client sends
// stdin's end. A client that goes away cancels the call.
func (s *Server) pump(conn io.Reader, w io.Writer, cancel context.CancelFunc) {
	open := true
	for {
		typ, p, err := readFrame(conn, maxData)
		if err != nil {
			cancel()
			return
		}
		switch typ {
		case frameStdin:
			if open {
				if _, err := w.Write(p); err != nil {
					open = false // bd stopped reading; keep draining
				}
			}
		case frameStdinEOF:
			if c, ok := w.(io.Closer); ok && open {
				_ = c.Close()
			}
			open = false
		}
	}
}
