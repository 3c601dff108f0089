// Package giteaserver runs a real Gitea on loopback for the tests of
// integrate = pr with forge = gitea: only the machine is the test's, the
// forge is the real one. scripts/install-gitea builds the pinned Gitea
// into .tools/gitea/ (the binary in bin/, its templates and options in
// static/).
//
// Each Server has a temp dir of its own (sqlite database, repositories,
// logs) and a free loopback port, and runs in a process group of its own
// that Close ends (and the kernel ends, should the test binary die
// first). Shared starts one Server per test binary on first use, for all
// its tests.
package giteaserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ralphd/ralphd/internal/proc"
)

// Admin is the name of the site administrator every Server has.
const Admin = "site-admin"

// Server is a running Gitea.
type Server struct {
	// URL is its base URL, http://127.0.0.1:<port>.
	URL string
	// AdminToken is an API token of Admin (all scopes).
	AdminToken string

	bin, dir, config string
	cancel           context.CancelFunc
	done             chan struct{}
	log              lockedBuffer
}

// Find returns the pinned Gitea under the repository's .tools/gitea, or
// why there is none.
func Find() (bin, static string, err error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", "", errors.New("no go.mod above the test's directory")
		}
		dir = parent
	}
	bin = filepath.Join(dir, ".tools", "gitea", "bin", "gitea")
	static = filepath.Join(dir, ".tools", "gitea", "static")
	if _, err := os.Stat(bin); err != nil {
		return "", "", fmt.Errorf("no Gitea at %s: run scripts/install-gitea (it builds the pinned Gitea through the Go module proxy)", bin)
	}
	return bin, static, nil
}

// Start runs a Gitea from bin with its static files in static, in a
// fresh temp dir, on a free loopback port: the database migrated, Admin
// created with a token, the API answering.
func Start(ctx context.Context, bin, static string) (_ *Server, err error) {
	dir, err := os.MkdirTemp("", "ralphd-gitea-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(dir)
		}
	}()
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &Server{URL: "http://127.0.0.1:" + strconv.Itoa(port), bin: bin, dir: dir, config: filepath.Join(dir, "app.ini"), done: make(chan struct{})}
	ini := fmt.Sprintf(appINI, dir, port, static)
	if err := os.WriteFile(s.config, []byte(ini), 0o600); err != nil {
		return nil, err
	}
	if _, err := s.cli(ctx, "migrate"); err != nil {
		return nil, err
	}
	if _, err := s.cli(ctx, "admin", "user", "create", "--username", Admin, "--password", "admin-password-1", "--email", Admin+"@example.invalid", "--admin", "--must-change-password=false"); err != nil {
		return nil, err
	}
	tok, err := s.cli(ctx, "admin", "user", "generate-access-token", "--username", Admin, "--token-name", "tests", "--scopes", "all", "--raw")
	if err != nil {
		return nil, err
	}
	s.AdminToken = strings.TrimSpace(tok)
	runCtx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	cmd := proc.Command(runCtx, 5*time.Second, bin, "--config", s.config, "--work-path", dir, "web")
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	cmd.Dir, cmd.Env = dir, s.env()
	cmd.Stdout, cmd.Stderr = &s.log, &s.log
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("start gitea web: %w", err)
	}
	go func() { _ = cmd.Wait(); close(s.done) }()
	for {
		var v struct{ Version string }
		if _, err := s.API(ctx, s.AdminToken, "GET", "version", nil, &v); err == nil && v.Version != "" {
			return s, nil
		}
		select {
		case <-s.done:
			s.Close()
			return nil, fmt.Errorf("gitea web ended before it answered: %s", s.Log())
		case <-ctx.Done():
			log := s.Log()
			s.Close()
			return nil, fmt.Errorf("gitea web did not answer at %s: %w: %s", s.URL, ctx.Err(), log)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// appINI is the minimal configuration: sqlite, installed, offline, no
// mail, no SSH; Actions on, for a runner of the tests' own
// (internal/testkit/gitearunner); %[1]s the temp dir, %[2]d the port, %[3]s the
// static files. CI's containers run the tests as root, which Gitea
// refuses unless told.
const appINI = `APP_NAME = ralphd tests
RUN_MODE = prod
I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true
WORK_PATH = %[1]s

[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = %[2]d
DOMAIN = 127.0.0.1
ROOT_URL = http://127.0.0.1:%[2]d/
OFFLINE_MODE = true
DISABLE_SSH = true
START_SSH_SERVER = false
LFS_START_SERVER = false
STATIC_ROOT_PATH = %[3]s
APP_DATA_PATH = %[1]s/data

[database]
DB_TYPE = sqlite3
PATH = %[1]s/gitea.db

[repository]
ROOT = %[1]s/repos

[security]
INSTALL_LOCK = true
SECRET_KEY = ralphd-tests-secret-key
INTERNAL_TOKEN = eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJuYmYiOjE3MDAwMDAwMDB9.ralphd-tests-internal-token-0000000000000
PASSWORD_HASH_ALGO = pbkdf2_hi

[oauth2]
ENABLED = false

[service]
DISABLE_REGISTRATION = true
REQUIRE_SIGNIN_VIEW = true

[mailer]
ENABLED = false

[actions]
ENABLED = true

[picture]
DISABLE_GRAVATAR = true

[session]
PROVIDER = memory

[cache]
ADAPTER = memory

[cron]
ENABLED = false

[indexer]
REPO_INDEXER_ENABLED = false

[log]
MODE = console
LEVEL = Warn
ROOT_PATH = %[1]s/log
`

// env is Gitea's environment: a home of its own, no user git config.
func (s *Server) env() []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(s.dir, "home"), "GITEA_WORK_DIR=" + s.dir, "GIT_CONFIG_NOSYSTEM=1"}
}

// cli runs `gitea <args>` on the server's configuration.
func (s *Server) cli(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := proc.Command(ctx, time.Second, s.bin, append([]string{"--config", s.config, "--work-path", s.dir}, args...)...)
	cmd.Dir, cmd.Env = s.dir, s.env()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("gitea %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(append(out.Bytes(), errb.Bytes()...)))
	}
	return out.String(), nil
}

// Log is what Gitea printed so far.
func (s *Server) Log() string {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	return s.log.b.String()
}

// Close stops Gitea (its process group) and removes its temp dir.
func (s *Server) Close() {
	if s.cancel != nil {
		s.cancel()
		<-s.done
	}
	_ = os.RemoveAll(s.dir)
}

// API makes one request to /api/v1/<path> with token ("" for none) and
// the JSON body in (nil for none), decoding a 2xx answer into out (nil:
// not decoded). It returns the status; a non-2xx status is an error too.
func (s *Server) API(ctx context.Context, token, method, path string, in, out any) (int, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.URL+"/api/v1/"+path, body)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "token "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("gitea %s %s: HTTP %d: %.300s", method, path, resp.StatusCode, b)
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, fmt.Errorf("gitea %s %s: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}

// User creates a user and returns an API token of theirs with all
// scopes: what they may do is what the repository lets them.
func (s *Server) User(ctx context.Context, name string) (token string, err error) {
	password := "password-of-" + name
	if _, err := s.API(ctx, s.AdminToken, "POST", "admin/users", map[string]any{
		"username": name, "email": name + "@example.invalid", "password": password, "must_change_password": false,
	}, nil); err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, "POST", s.URL+"/api/v1/users/"+name+"/tokens",
		strings.NewReader(`{"name":"tests","scopes":["all"]}`))
	if err != nil {
		return "", err
	}
	req.SetBasicAuth(name, password)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var t struct {
		SHA1 string `json:"sha1"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&t); err != nil || t.SHA1 == "" {
		return "", fmt.Errorf("token of %s: HTTP %d, %v", name, resp.StatusCode, err)
	}
	return t.SHA1, nil
}

// Repo creates an empty repository owner/name (owner a user, created
// by the admin), returning its clone URL with the owner's token in it.
func (s *Server) Repo(ctx context.Context, owner, ownerToken, name string) (cloneURL string, err error) {
	if _, err := s.API(ctx, ownerToken, "POST", "user/repos", map[string]any{"name": name, "private": true, "default_branch": "main"}, nil); err != nil {
		return "", err
	}
	return fmt.Sprintf("http://%s:%s@%s/%s/%s.git", owner, ownerToken, strings.TrimPrefix(s.URL, "http://"), owner, name), nil
}

// Collaborator gives user permission ("read", "write", "admin") on
// owner/name.
func (s *Server) Collaborator(ctx context.Context, ownerToken, repo, user, permission string) error {
	_, err := s.API(ctx, ownerToken, "PUT", "repos/"+repo+"/collaborators/"+user, map[string]string{"permission": permission}, nil)
	return err
}

// RunnerToken is a registration token for a runner of repo
// (owner/name) only, asked for with its owner's token.
func (s *Server) RunnerToken(ctx context.Context, ownerToken, repo string) (string, error) {
	var t struct {
		Token string `json:"token"`
	}
	if _, err := s.API(ctx, ownerToken, "POST", "repos/"+repo+"/actions/runners/registration-token", nil, &t); err != nil {
		return "", err
	}
	if t.Token == "" {
		return "", fmt.Errorf("gitea gave %s no runner registration token", repo)
	}
	return t.Token, nil
}

// freePort is a loopback port nothing listens on right now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// lockedBuffer gathers Gitea's two output streams.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// Shared is one Server for a whole test binary, started by the first
// test that asks (Get) and stopped by TestMain (Close).
type Shared struct {
	once sync.Once
	s    *Server
	err  error
}

// Get returns the shared Server, starting it on first use. Without the
// pinned Gitea the test is skipped, saying how to get it, or with CI set
// fails.
func (sh *Shared) Get(t testing.TB) *Server {
	t.Helper()
	sh.once.Do(func() {
		bin, static, err := Find()
		if err != nil {
			sh.err = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		sh.s, sh.err = Start(ctx, bin, static)
	})
	if sh.err != nil {
		if _, _, findErr := Find(); findErr != nil && os.Getenv("CI") == "" {
			t.Skip(findErr)
		}
		t.Fatal(sh.err)
	}
	return sh.s
}

// Close stops the shared Server, if one was started.
func (sh *Shared) Close() {
	if sh.s != nil {
		sh.s.Close()
	}
}

// Merge merges pull request n of repo as the user of token, as a
// reviewer does, waiting while Gitea still checks whether it can be
// merged (405 "Please try again later" after a push).
func (s *Server) Merge(ctx context.Context, token, repo string, n int) error {
	for deadline := time.Now().Add(30 * time.Second); ; {
		status, err := s.API(ctx, token, "POST", fmt.Sprintf("repos/%s/pulls/%d/merge", repo, n), map[string]string{"Do": "merge"}, nil)
		if err == nil || status != http.StatusMethodNotAllowed || !strings.Contains(err.Error(), "try again later") || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
