package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/matryer/is"
)

// TestCountRecords: the double-work figure counts from the workers' own
// files, and finds overlaps and repeats.
func TestCountRecords(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	files := map[string]string{
		"w0": "start a 10\nend a 20\nstart b 30\nend b 40\n",
		"w1": "start c 10\nend c 20\nstart b 35\nend b 45\n", // b overlaps w0's
		"w2": "start a 50\nend a 60\n",                       // a again, later
	}
	for n, body := range files {
		is.NoErr(os.WriteFile(filepath.Join(dir, n), []byte(body), 0o644))
	}
	var w workersResult
	is.NoErr(countRecords(dir, &w))
	is.Equal(w.Won, 5)
	is.Equal(w.WorkedTwice, 2) // a and b
	is.Equal(w.Overlapping, 1) // only b at once

	is.NoErr(os.WriteFile(filepath.Join(dir, "w3"), []byte("garbage\n"), 0o644))
	is.True(countRecords(dir, &workersResult{}) != nil) // a bad record is an error, not a zero
}

func TestQuantile(t *testing.T) {
	is := is.New(t)
	var ds []time.Duration
	for i := 1; i <= 20; i++ {
		ds = append(ds, time.Duration(i))
	}
	is.Equal(quantile(ds, 0.5), time.Duration(10))
	is.Equal(quantile(ds, 0.95), time.Duration(19))
	is.Equal(quantile(nil, 0.5), time.Duration(0))
	is.Equal(quantile(ds[:1], 0.95), time.Duration(1))
}
