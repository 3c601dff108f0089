package state

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/atomicfile"
)

func TestOpenCreatesLayout(t *testing.T) {
	is := is.New(t)
	root := filepath.Join(t.TempDir(), "ralph")
	id := testIdentity(t)
	s, err := Open(context.Background(), root, id, "v1.2.3")
	is.NoErr(err)
	is.Equal(s.Dir(), filepath.Join(root, "projects", testID))
	for _, d := range []string{s.Dir(), s.LogsDir(), s.ReportsDir(), s.AttemptsDir()} {
		fi, err := os.Stat(d)
		is.NoErr(err)
		is.True(fi.IsDir())
		is.Equal(fi.Mode().Perm(), os.FileMode(0o700)) // dirs are 0700
	}
	fi, err := os.Stat(filepath.Join(s.Dir(), MetadataFile))
	is.NoErr(err)
	is.Equal(fi.Mode().Perm(), os.FileMode(0o600)) // files are 0600

	var m map[string]any
	is.NoErr(json.Unmarshal([]byte(readFile(t, filepath.Join(s.Dir(), MetadataFile))), &m))
	is.Equal(m["project_id"], testID)
	is.Equal(m["project_path"], id.TopLevel)
	is.Equal(m["remote_url"], "none")
	is.Equal(m["ralphd_version"], "v1.2.3")
	created, ok := m["created_at"].(string)
	is.True(ok)
	is.True(created != "")
	is.Equal(s.Identity(), id)
}

func TestOpenRejectsBadInput(t *testing.T) {
	tests := []struct {
		name string
		root string
		id   string
	}{
		{"empty id", "x", ""},
		{"path in id", "x", "../../etc/pw"},
		{"upper hex", "x", "0123456789AB"},
		{"empty root", "", testID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			root := tt.root
			if root != "" {
				root = t.TempDir()
			}
			_, err := Open(context.Background(), root, Identity{ID: tt.id}, "v")
			is.True(err != nil)
		})
	}
}

// bashLoopState builds, by hand, a state dir the way the bash loop's
// ralph-state.sh and loop.sh leave it.
func bashLoopState(t *testing.T, root, projectPath string) string {
	t.Helper()
	dir := filepath.Join(root, "projects", testID)
	writeFile(t, filepath.Join(dir, "metadata.json"), `{
  "project_id": "`+testID+`",
  "project_path": "`+projectPath+`",
  "remote_url": "git@github.com:someone/app.git",
  "created_at": "2026-01-26T10:11:12+01:00"
}
`)
	writeFile(t, filepath.Join(dir, "attempts.txt"), "bd-a1b:2\nbd-c3d.1:3\napp-xyz:1\n")
	writeFile(t, filepath.Join(dir, "logs", "2026-01-26T10-11-12.log"),
		`{"type":"loop_meta","event":"iteration_start","timestamp":"2026-01-26T10:11:12+01:00","data":{"iteration":1,"issue_id":"bd-a1b","mode":"build"}}`+"\n")
	return dir
}

func TestOpenKeepsBashLoopState(t *testing.T) {
	is := is.New(t)
	root := t.TempDir()
	dir := bashLoopState(t, root, "/home/someone/app")
	id := Identity{ID: testID, Rule: RuleRemote, RemoteURL: "git@github.com:someone/app.git", TopLevel: "/elsewhere/clone"}
	s, err := Open(context.Background(), root, id, "v9")
	is.NoErr(err)
	is.Equal(s.Dir(), dir)
	is.Equal(len(s.Warnings()), 0)

	m, err := s.Metadata()
	is.NoErr(err)
	is.Equal(m.ProjectID, testID)
	is.Equal(m.ProjectPath, "/home/someone/app") // the bash loop's values are never changed
	is.Equal(m.RemoteURL, "git@github.com:someone/app.git")
	is.Equal(m.CreatedAt, "2026-01-26T10:11:12+01:00")
	is.Equal(m.RalphdVersion, "v9")

	counts, err := s.Attempts()
	is.NoErr(err)
	is.Equal(counts, []AttemptCount{{"bd-a1b", 2}, {"bd-c3d.1", 3}, {"app-xyz", 1}})
	n, err := s.Attempt("bd-c3d.1")
	is.NoErr(err)
	is.Equal(n, 3)
}

func TestMetadataPreservesUnknownKeys(t *testing.T) {
	is := is.New(t)
	root := t.TempDir()
	dir := filepath.Join(root, "projects", testID)
	writeFile(t, filepath.Join(dir, "metadata.json"), `{"project_id":"`+testID+`","project_path":"/p","remote_url":"none","created_at":"2026-01-01T00:00:00+00:00","other_tool":{"a":[1,2]},"note":"keep me"}`)
	s, err := Open(context.Background(), root, testIdentity(t), "v2")
	is.NoErr(err)
	s.Now = fixedNow
	is.NoErr(s.MarkRun("run-1", "build"))

	var m map[string]json.RawMessage
	is.NoErr(json.Unmarshal([]byte(readFile(t, filepath.Join(dir, "metadata.json"))), &m))
	is.Equal(string(m["note"]), `"keep me"`)
	var other map[string][]int
	is.NoErr(json.Unmarshal(m["other_tool"], &other))
	is.Equal(other["a"], []int{1, 2})
	is.Equal(string(m["last_run_id"]), `"run-1"`)
	is.Equal(string(m["last_run_mode"]), `"build"`)
	is.Equal(string(m["last_run_at"]), `"2026-01-02T15:04:05Z"`)
	is.Equal(string(m["ralphd_version"]), `"v2"`)
	is.Equal(string(m["project_path"]), `"/p"`)
}

func TestMetadataEncodeOrder(t *testing.T) {
	is := is.New(t)
	m := Metadata{ProjectID: "id", ProjectPath: "/p", RemoteURL: "none", CreatedAt: "c",
		Other: map[string]json.RawMessage{"zz": json.RawMessage(`1`), "aa": json.RawMessage(`true`), "project_id": json.RawMessage(`"dup"`)}}
	data, err := m.Encode()
	is.NoErr(err)
	is.Equal(string(data), "{\n  \"project_id\": \"id\",\n  \"project_path\": \"/p\",\n  \"remote_url\": \"none\",\n  \"created_at\": \"c\",\n  \"aa\": true,\n  \"zz\": 1\n}\n")
}

func TestCorruptMetadataIsMovedAside(t *testing.T) {
	is := is.New(t)
	root := t.TempDir()
	dir := filepath.Join(root, "projects", testID)
	// The bash loop writes metadata with a heredoc: a path with a quote in
	// it makes invalid JSON.
	bad := "{\n  \"project_id\": \"" + testID + "\",\n  \"project_path\": \"/home/me/it\"s\",\n}\n"
	writeFile(t, filepath.Join(dir, "metadata.json"), bad)
	s, err := Open(context.Background(), root, testIdentity(t), "v")
	is.NoErr(err)
	warns := s.Warnings()
	is.Equal(len(warns), 1)
	matches, err := filepath.Glob(filepath.Join(dir, "metadata.json.corrupt-*"))
	is.NoErr(err)
	is.Equal(len(matches), 1)
	is.Equal(readFile(t, matches[0]), bad)          // kept verbatim
	is.True(strings.Contains(warns[0], matches[0])) // the warning names the file
	_, err = s.Metadata()                           // and a fresh, valid one was written
	is.NoErr(err)
	is.Equal(len(s.Warnings()), 0) // warnings are drained
}

func TestRemoveStaleTemps(t *testing.T) {
	is := is.New(t)
	s := openStore(t)
	stale := filepath.Join(s.Dir(), ".attempts.txt"+atomicfile.TempInfix+"123")
	writeFile(t, stale, "bd-1:")
	bashTmp := filepath.Join(s.Dir(), "attempts.txt.tmp") // not ours
	writeFile(t, bashTmp, "x")
	removed, err := s.RemoveStaleTemps()
	is.NoErr(err)
	is.Equal(removed, []string{filepath.Base(stale)})
	_, err = os.Stat(stale)
	is.True(os.IsNotExist(err))
	_, err = os.Stat(bashTmp)
	is.NoErr(err)
}

func TestWriteReport(t *testing.T) {
	is := is.New(t)
	s := openStore(t)
	path, err := s.WriteReport("20260102T150405-ab12", []byte("{}\n"), []byte("# report\n"))
	is.NoErr(err)
	is.Equal(path, filepath.Join(s.ReportsDir(), "20260102T150405-ab12.md"))
	is.Equal(readFile(t, path), "# report\n")
	is.Equal(readFile(t, strings.TrimSuffix(path, ".md")+".json"), "{}\n")
	for _, bad := range []string{"", "../x", "a/b", ".hidden"} {
		_, err := s.WriteReport(bad, nil, nil)
		is.True(err != nil) // a run id never names a file outside reports/
	}
}
