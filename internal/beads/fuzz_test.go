package beads_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/beads"
)

// addFixtureSeeds seeds f with the stdout and stderr of every fixture and
// with a few hand-made edge cases.
func addFixtureSeeds(f *testing.F) {
	f.Helper()
	for _, fx := range loadFixtures(f) {
		f.Add(fx.Stdout)
		if len(fx.Stderr) > 0 {
			f.Add(fx.Stderr)
		}
	}
	for _, s := range []string{
		``, `[]`, `{}`, `null`, `[null]`, `{"data":null,"schema_version":1}`,
		`[{"id":"a","priority":"P1","dependencies":[{"id":"b","dependency_type":"parent-child","status":"open"}]}]`,
		`[{"id":"a","priority":1,"blocked_by":[{"id":"b"},"c"]}]`,
		`{"error":{"message":"x"}}`, `{"summary":{"total_issues":1e400}}`,
	} {
		f.Add([]byte(s))
	}
}

// checkParseError checks that a parser error is one of the typed ones and
// that a BadJSONError keeps exactly the head of the input.
func checkParseError(t *testing.T, data []byte, err error) {
	t.Helper()
	var bj *beads.BadJSONError
	var re *beads.ReportedError
	switch {
	case errors.As(err, &bj):
		n := min(len(data), beads.HeadLen)
		if bj.Head != string(data[:n]) || bj.Len != len(data) {
			t.Fatalf("BadJSONError head %q, len %d; input %q", bj.Head, bj.Len, data)
		}
		_ = err.Error()
	case errors.As(err, &re):
		if msg, ok := beads.ParseErrorObject(data); !ok || msg != re.Message {
			t.Fatalf("ReportedError %q, but ParseErrorObject says %q, %v", re.Message, msg, ok)
		}
	default:
		t.Fatalf("untyped error %T: %v", err, err)
	}
}

// checkIssue checks the invariants of a parsed issue.
func checkIssue(t *testing.T, i beads.Issue) {
	t.Helper()
	if i.ID == "" {
		t.Fatal("issue without id")
	}
	for _, d := range i.Dependencies {
		if d.DependsOnID == "" || d.IssueID == "" {
			t.Fatalf("dependency without ids: %+v", d)
		}
	}
}

func FuzzParseIssues(f *testing.F) {
	addFixtureSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		issues, err := beads.ParseIssues(data)
		if err != nil {
			checkParseError(t, data, err)
			return
		}
		for _, i := range issues {
			checkIssue(t, i)
		}
		// Parsing is deterministic and does not depend on the input
		// buffer after it returns.
		cp := bytes.Clone(data)
		again, err := beads.ParseIssues(cp)
		for k := range cp {
			cp[k] = 0
		}
		if err != nil || !reflect.DeepEqual(issues, again) {
			t.Fatalf("second parse differs: %v", err)
		}
	})
}

func FuzzParseIssue(f *testing.F) {
	addFixtureSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		issue, err := beads.ParseIssue(data)
		if err != nil {
			checkParseError(t, data, err)
			return
		}
		checkIssue(t, issue)
		// Whatever is one issue is also a list of exactly that issue.
		list, err := beads.ParseIssues(data)
		if err != nil || len(list) != 1 || !reflect.DeepEqual(list[0], issue) {
			t.Fatalf("ParseIssues disagrees with ParseIssue: %v, %d issues", err, len(list))
		}
	})
}

func FuzzParseStats(f *testing.F) {
	addFixtureSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := beads.ParseStats(data)
		if err != nil {
			checkParseError(t, data, err)
		}
	})
}

func FuzzParseErrorObject(f *testing.F) {
	addFixtureSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		msg, ok := beads.ParseErrorObject(data)
		if !ok {
			if msg != "" {
				t.Fatalf("message %q without ok", msg)
			}
			return
		}
		// An error object is never taken for issues.
		_, err := beads.ParseIssues(data)
		var re *beads.ReportedError
		if !errors.As(err, &re) || re.Message != msg {
			t.Fatalf("ParseIssues on an error object: %v", err)
		}
	})
}

// FuzzParseComments checks `bd comments --json` parsing: it never panics,
// it is deterministic, and a comment list means the same inside an issue
// (`bd show` with comments) as on its own. (A comment without an id is
// taken: tamper matches such comments by author and text.)
func FuzzParseComments(f *testing.F) {
	addFixtureSeeds(f)
	f.Add([]byte(`[{"id":"1","author":"a","text":"t","created_at":"2026-11-21T18:31:42Z"}]`))
	f.Add([]byte(`[{"id":7,"author":"a","text":"t","created_at":"2026-11-21T18:31:42.123456789+01:00"},{}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cs, err := beads.ParseComments(data)
		again, err2 := beads.ParseComments(bytes.Clone(data))
		if (err == nil) != (err2 == nil) || !reflect.DeepEqual(cs, again) {
			t.Fatalf("second parse differs: %v / %v", err, err2)
		}
		if err != nil {
			return
		}
		issue, err := beads.ParseIssue(append(append([]byte(`{"id":"x-1","priority":2,"comments":`), data...), '}'))
		if err != nil {
			t.Fatalf("comments that parse alone do not parse in an issue: %v", err)
		}
		if len(issue.Comments) != len(cs) || (len(cs) > 0 && !reflect.DeepEqual(issue.Comments, cs)) {
			t.Fatalf("in an issue %+v, alone %+v", issue.Comments, cs)
		}
	})
}

// FuzzParseWhere checks `bd where --json` parsing, which decides which
// tracker ralphd pins: it never panics, fails only with typed errors,
// never takes an answer without a path, and what it reads survives being
// printed again, bare or in the envelope.
func FuzzParseWhere(f *testing.F) {
	addFixtureSeeds(f)
	f.Add([]byte(`{"path":"/r/.beads","redirected_from":"/s/.beads","database_path":"/r/.beads/embeddeddolt","prefix":"rt","schema_version":1}`))
	f.Add([]byte(`{"path":"","database_path":"/x"}`))
	f.Add([]byte(`{"path":"/r/.beads","prefix":7}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := beads.ParseWhere(data)
		if err != nil {
			checkParseError(t, data, err)
			return
		}
		if w.Path == "" {
			t.Fatalf("a where without a path: %q", data)
		}
		if !utf8.ValidString(w.Path + w.RedirectedFrom + w.DatabasePath + w.Prefix) {
			return // printed again, invalid bytes would read as U+FFFD
		}
		bare, err := json.Marshal(map[string]any{"path": w.Path, "redirected_from": w.RedirectedFrom,
			"database_path": w.DatabasePath, "prefix": w.Prefix, "schema_version": 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, out := range [][]byte{bare, []byte(`{"data":` + string(bare) + `,"schema_version":1}`)} {
			again, err := beads.ParseWhere(out)
			if err != nil || again != w {
				t.Fatalf("printed again %s, parsed %+v, %v; want %+v", out, again, err, w)
			}
		}
	})
}

// FuzzParseContext checks `bd context --json` parsing the same way: no
// panic, typed errors, and a stable reading.
func FuzzParseContext(f *testing.F) {
	addFixtureSeeds(f)
	f.Add([]byte(`{"beads_dir":"/r/.beads","dolt_mode":"server","server_host":"127.0.0.1","server_port":3307,"database":"sv","project_id":"p","is_redirected":true}`))
	f.Add([]byte(`{"server_port":1.5}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := beads.ParseContext(data)
		if err != nil {
			checkParseError(t, data, err)
			return
		}
		again, err := beads.ParseContext(bytes.Clone(data))
		if err != nil || again != c {
			t.Fatalf("second parse differs: %+v, %v", again, err)
		}
	})
}

func TestParseWhereFixtures(t *testing.T) {
	is := is.New(t)
	w, err := beads.ParseWhere(loadFixture(t, "where-json").Stdout)
	is.NoErr(err)
	is.Equal(w, beads.Where{Path: "<REPO>/.beads", DatabasePath: "<REPO>/.beads/embeddeddolt", Prefix: "rt"})
	w, err = beads.ParseWhere(loadFixture(t, "server-where-clone-a-json").Stdout)
	is.NoErr(err)
	is.Equal(w, beads.Where{Path: "<SCRATCH>/clone-a/.beads", DatabasePath: "<SCRATCH>/clone-a/.beads/dolt"}) // no prefix in server mode
	c, err := beads.ParseContext(loadFixture(t, "context-json").Stdout)
	is.NoErr(err)
	is.Equal(c, beads.Context{BeadsDir: "<REPO>/.beads", DoltMode: "embedded", Database: "rt", ProjectID: "633b6412-77a5-44c7-8f4c-cc45da8537ea"})
	_, err = beads.ParseWhere([]byte(`{"error":"no_beads_directory","message":"no .beads"}`))
	var re *beads.ReportedError
	is.True(errors.As(err, &re)) // bd's error object is bd's error, not a path
}

// FuzzParseExport checks `bd export` parsing (JSON lines), which a first
// snapshot takes comments from: it never panics, fails only with typed
// errors, is deterministic, and each issue line it takes means what it
// means to ParseIssue alone, so the export and `bd show` agree.
func FuzzParseExport(f *testing.F) {
	addFixtureSeeds(f)
	f.Add([]byte(`{"_type":"issue","id":"x-1","priority":2,"comments":[{"id":"1","author":"a","text":"t","created_at":"2026-11-21T18:31:42Z"}]}` + "\n" + `{"_type":"memory","key":"k"}` + "\n\n" + `{"id":"x-2","priority":0}`))
	f.Add([]byte("{\"id\":\"x-1\",\"priority\":2}\n[1]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		issues, err := beads.ParseExport(data)
		var re *beads.ReportedError
		if err != nil && !errors.As(err, &re) { // an error object on one line
			checkParseError(t, data, err)
		}
		again, err2 := beads.ParseExport(bytes.Clone(data))
		if (err == nil) != (err2 == nil) || !reflect.DeepEqual(issues, again) {
			t.Fatalf("second parse differs: %v / %v", err, err2)
		}
		if err != nil {
			return
		}
		k := 0
		for _, line := range bytes.Split(data, []byte("\n")) {
			var obj map[string]any
			if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &obj) != nil {
				continue
			}
			if typ, ok := obj["_type"]; ok && typ != "issue" {
				continue // a memory: skipped
			}
			is, err := beads.ParseIssue(line)
			if err != nil {
				t.Fatalf("line %q taken by the export does not parse alone: %v", line, err)
			}
			if k >= len(issues) || !reflect.DeepEqual(issues[k], is) {
				t.Fatalf("issue %d of the export differs from its line parsed alone", k)
			}
			k++
		}
		if k != len(issues) {
			t.Fatalf("%d issues taken, %d issue lines", len(issues), k)
		}
	})
}
