package state

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/matryer/is"
)

func TestParseAttempts(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		counts []AttemptCount
		bad    []string
	}{
		{"empty", "", nil, nil},
		{"bash loop lines", "bd-a1:1\nbd-b2.3:12\n", []AttemptCount{{"bd-a1", 1}, {"bd-b2.3", 12}}, nil},
		{"no final newline", "bd-a1:1\nbd-b2:2", []AttemptCount{{"bd-a1", 1}, {"bd-b2", 2}}, nil},
		{"blank lines and CRLF", "\nbd-a1:1\r\n\r\n  bd-b2:2  \n", []AttemptCount{{"bd-a1", 1}, {"bd-b2", 2}}, nil},
		{"cut short", "bd-a1:3\nbd-b2:", []AttemptCount{{"bd-a1", 3}}, []string{"bd-b2:"}},
		{"garbage", "bd-a1:3\n\x00\x00\x00\nhello\n:4\nbd-x:-1\nbd-y:1.5\nbd-z:9999999999\na b:1\n",
			[]AttemptCount{{"bd-a1", 3}}, []string{"\x00\x00\x00", "hello", ":4", "bd-x:-1", "bd-y:1.5", "bd-z:9999999999", "a b:1"}},
		{"extra colon", "bd-a:b:3\n", nil, []string{"bd-a:b:3"}},
		{"duplicate: last wins, earlier kept as bad", "bd-a1:1\nbd-b2:1\nbd-a1:4\n", []AttemptCount{{"bd-a1", 4}, {"bd-b2", 1}}, []string{"bd-a1:1"}},
		{"zero count kept", "bd-a1:0\n", []AttemptCount{{"bd-a1", 0}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			counts, bad := ParseAttempts([]byte(tt.in))
			is.Equal(counts, tt.counts)
			is.Equal(bad, tt.bad)
		})
	}
}

func TestAttemptCounters(t *testing.T) {
	is := is.New(t)
	s := openStore(t)

	n, err := s.Attempt("bd-1")
	is.NoErr(err)
	is.Equal(n, 0) // no file yet

	for want := 1; want <= 3; want++ {
		n, err = s.IncrementAttempt("bd-1")
		is.NoErr(err)
		is.Equal(n, want)
	}
	n, err = s.IncrementAttempt("bd-2")
	is.NoErr(err)
	is.Equal(n, 1)
	is.Equal(readFile(t, s.AttemptsPath()), "bd-1:3\nbd-2:1\n")
	fi, err := os.Stat(s.AttemptsPath())
	is.NoErr(err)
	is.Equal(fi.Mode().Perm(), os.FileMode(0o600))

	n, err = s.GiveBackAttempt("bd-1")
	is.NoErr(err)
	is.Equal(n, 2)
	n, err = s.GiveBackAttempt("bd-2") // reaching 0 removes the line
	is.NoErr(err)
	is.Equal(n, 0)
	is.Equal(readFile(t, s.AttemptsPath()), "bd-1:2\n")
	n, err = s.GiveBackAttempt("bd-none") // never below 0
	is.NoErr(err)
	is.Equal(n, 0)

	_, err = s.IncrementAttempt("bd-3")
	is.NoErr(err)
	was, err := s.Reset("bd-1", "bd-unknown")
	is.NoErr(err)
	is.Equal(was, map[string]int{"bd-1": 2})
	all, err := s.Attempts()
	is.NoErr(err)
	is.Equal(all, []AttemptCount{{"bd-3", 1}})

	_, err = s.IncrementAttempt("bd-4")
	is.NoErr(err)
	was, err = s.ResetAll()
	is.NoErr(err)
	is.Equal(was, map[string]int{"bd-3": 1, "bd-4": 1})
	is.Equal(readFile(t, s.AttemptsPath()), "") // the file stays, empty, as the bash loop expects
	is.Equal(len(s.Warnings()), 0)
}

func TestIncrementRejectsUnstorableIDs(t *testing.T) {
	s := openStore(t)
	for _, id := range []string{"", "a:b", "a b", "a\nb", "\xff"} {
		is := is.New(t)
		_, err := s.IncrementAttempt(id)
		is.True(err != nil)
	}
}

// TestAttemptsReadableByBashLoop reads what ralphd wrote with the bash
// loop's own commands: `grep "^${id}:" file | cut -d: -f2`.
func TestAttemptsReadableByBashLoop(t *testing.T) {
	is := is.New(t)
	s := openStore(t)
	// Start from a bash-loop file, change it with ralphd.
	writeFile(t, s.AttemptsPath(), "bd-a:2\nbd-b:1\n")
	_, err := s.IncrementAttempt("bd-a")
	is.NoErr(err)
	_, err = s.IncrementAttempt("bd-c.1")
	is.NoErr(err)
	for id, want := range map[string]string{"bd-a": "3", "bd-b": "1", "bd-c.1": "1"} {
		got := run(t, s.Dir(), []string{"ID=" + id}, "sh", "-c", `grep "^${ID}:" attempts.txt | cut -d: -f2`)
		is.Equal(strings.TrimSpace(got), want)
	}
}

func TestCorruptAttemptsAreMovedAside(t *testing.T) {
	is := is.New(t)
	s := openStore(t)
	writeFile(t, s.AttemptsPath(), "bd-a:2\nbd-b:\x00\x00garbage\nbd-c:1\nnot a line\n")

	n, err := s.IncrementAttempt("bd-c") // any operation recovers
	is.NoErr(err)
	is.Equal(n, 2)

	warns := s.Warnings()
	is.Equal(len(warns), 1)
	matches, err := filepath.Glob(s.AttemptsPath() + ".corrupt-*")
	is.NoErr(err)
	is.Equal(len(matches), 1)
	is.Equal(filepath.Base(matches[0]), "attempts.txt.corrupt-20260102T150405Z")
	is.True(strings.Contains(warns[0], matches[0]))                         // the warning names the file
	is.Equal(readFile(t, matches[0]), "bd-b:\x00\x00garbage\nnot a line\n") // nothing lost
	is.Equal(readFile(t, s.AttemptsPath()), "bd-a:2\nbd-c:2\n")             // valid lines used

	// A second corruption at the same second gets its own file.
	writeFile(t, s.AttemptsPath(), "bd-a:2\n???\n")
	_, err = s.Attempts()
	is.NoErr(err)
	matches, err = filepath.Glob(s.AttemptsPath() + ".corrupt-*")
	is.NoErr(err)
	is.Equal(len(matches), 2)
	is.Equal(readFile(t, s.AttemptsPath()+".corrupt-20260102T150405Z-2"), "???\n")
	is.Equal(len(s.Warnings()), 1)
}

func TestConcurrentIncrements(t *testing.T) {
	is := is.New(t)
	s := openStore(t)
	const n = 20
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if _, err := s.IncrementAttempt("bd-1"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got, err := s.Attempt("bd-1")
	is.NoErr(err)
	is.Equal(got, n)
}
