package scriptedgh

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// gh runs the real gh against s with token; a missing gh skips (fails
// with CI set).
func gh(t *testing.T, s *Server, token string, stdin string, args ...string) (string, error) {
	t.Helper()
	bin, err := exec.LookPath("gh")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("gh is not installed")
		}
		t.Skip("gh is not installed")
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), s.Env(token, t.TempDir())...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	return out.String(), err
}

// TestGHTalksToTheScriptedServer: the real gh reaches the server through
// GH_HOST and HTTP_PROXY, with its token; a pull request opened is found
// by its head; a conditional read of an unchanged answer is a 304; a
// token that is not a reviewer's cannot merge or approve.
func TestGHTalksToTheScriptedServer(t *testing.T) {
	s := &Server{Owner: "o", Repo: "r", Tokens: []string{"tok"}, Reviewers: []string{"boss"}}
	s.Start()
	defer s.Close()
	list := func(token string) string {
		out, err := gh(t, s, token, "", "api", "-i", "repos/o/r/pulls?state=open&head=o:ralph/x")
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return out
	}
	if out := list("tok"); !strings.Contains(out, "\r\n\r\n[]") {
		t.Fatalf("empty list: %q", out)
	}
	if out, err := gh(t, s, "tok", `{"title":"t","head":"ralph/x","base":"main","body":"b"}`, "api", "-X", "POST", "repos/o/r/pulls", "--input", "-"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if out := list("tok"); !strings.Contains(out, `"number":1`) {
		t.Fatalf("the pull request is not listed: %s", out)
	}
	for _, c := range []struct {
		token string
		args  []string
		want  string
	}{
		{"tok", []string{"api", "-X", "PUT", "repos/o/r/pulls/1/merge"}, "HTTP 403"},
		{"tok", []string{"api", "-X", "POST", "repos/o/r/pulls/1/reviews", "-f", "event=APPROVE"}, "HTTP 403"},
		{"", []string{"api", "-X", "PUT", "repos/o/r/pulls/1/merge"}, "HTTP 401"},
		{"boss", []string{"api", "-X", "PUT", "repos/o/r/pulls/1/merge"}, `"merged":true`},
	} {
		out, _ := gh(t, s, c.token, "", c.args...)
		if !strings.Contains(out, c.want) {
			t.Errorf("%s %v: want %q in %q", c.token, c.args, c.want, out)
		}
	}
}
