package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ralphd/ralphd/internal/testkit/standin"
)

func TestRealBinLabel(t *testing.T) {
	for _, tc := range []struct{ version, want string }{
		{"bd version 1.0.5 (dev: 6a3f515ced18)", "real bd 1.0.5"},
		{"bd version 1.1.0-rc1", "real bd 1.1.0-rc1"},
		{"something else", "real bd"},
		{"", "real bd"},
	} {
		if got := (&realBin{Version: tc.version}).Label(); got != tc.want {
			t.Errorf("Label(%q) = %q, want %q", tc.version, got, tc.want)
		}
	}
	if got := (&benchEnv{}).bdLabel(); got != "stand-in bd" {
		t.Errorf("stand-in label %q", got)
	}
}

// TestRealCacheKey: a cached tracker is found again only for the same bd
// version and the same mix.
func TestRealCacheKey(t *testing.T) {
	base := realCacheKey("bd version 1.0.5", trackerMix(5000, 300))
	if base != realCacheKey("bd version 1.0.5", trackerMix(5000, 300)) {
		t.Fatal("the key is not stable")
	}
	for name, other := range map[string]string{
		"version": realCacheKey("bd version 1.0.6", trackerMix(5000, 300)),
		"issues":  realCacheKey("bd version 1.0.5", trackerMix(50, 300)),
		"open":    realCacheKey("bd version 1.0.5", trackerMix(5000, 301)),
		"seed":    realCacheKey("bd version 1.0.5", standin.Mix{Issues: 5000, Open: 300, Seed: 1}),
	} {
		if other == base {
			t.Errorf("a different %s gives the same key %s", name, base)
		}
	}
}

// TestRealTrackerFromCache: a cache entry is copied (its project whole,
// and what the move took, marked as cached) without running bd at all:
// the bd here does not exist.
func TestRealTrackerFromCache(t *testing.T) {
	work := t.TempDir()
	cache := filepath.Join(work, "cache")
	version := "bd version 1.0.5 (dev: x)"
	m := trackerMix(50, 50)
	entry := filepath.Join(cache, "realbd-"+realCacheKey(version, m))
	if err := os.MkdirAll(filepath.Join(entry, "project", ".beads"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(entry, "project", ".beads", "marker"), []byte("moved"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := moved{Seeded: standin.Seeded{Issues: 50, Closed: 3}, Imported: 50, Version: version, Made: time.Date(2026, 11, 28, 5, 0, 0, 0, time.UTC),
		Import: 11 * time.Minute, Flatten: 2 * time.Second, BeadsBefore: 516 << 20, BeadsAfter: 3 << 20}
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(entry, "moved.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	e := &benchEnv{work: work, real: &realBin{Path: filepath.Join(work, "no-such-bd"), Version: version, cache: cache}}
	dir := filepath.Join(work, "project")
	got, err := e.realTracker(context.Background(), dir, m, func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Cached || got.Seeded != want.Seeded || got.Import != want.Import || got.BeadsAfter != want.BeadsAfter {
		t.Errorf("got %+v, want %+v from the cache", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(dir, ".beads", "marker")); err != nil || string(b) != "moved" {
		t.Errorf("the project was not copied: %q, %v", b, err)
	}
	for _, want := range []string{"11m0s", "516.0 MB", "3.0 MB", "copied from the bench's cache, moved on 2026-11-28 05:00 UTC"} {
		if d := got.describe(); !strings.Contains(d, want) {
			t.Errorf("describe() = %q, want %q in it", d, want)
		}
	}
	// Another mix is not in the cache: it is moved, which needs the bd.
	if _, err := e.realTracker(context.Background(), filepath.Join(work, "other"), trackerMix(60, 60), func(string, ...any) {}); err == nil {
		t.Error("a mix not in the cache was made without its bd")
	}
}

// TestCacheMoved: an entry is written whole (project and moved.json) and
// read back by the same key.
func TestCacheMoved(t *testing.T) {
	work := t.TempDir()
	src := filepath.Join(work, "src")
	if err := os.MkdirAll(filepath.Join(src, ".beads"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, ".beads", "x"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	entry := filepath.Join(work, "cache", "realbd-k")
	mv := moved{Seeded: standin.Seeded{Issues: 7}, Version: "v", Import: time.Second}
	if err := cacheMoved(context.Background(), entry, src, mv); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(entry, "moved.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got moved
	if err := json.Unmarshal(b, &got); err != nil || got.Seeded.Issues != 7 || got.Import != time.Second {
		t.Errorf("moved.json: %s (%v)", b, err)
	}
	if _, err := os.Stat(filepath.Join(entry, "project", ".beads", "x")); err != nil {
		t.Error(err)
	}
	leftovers, _ := filepath.Glob(filepath.Join(work, "cache", "*.tmp-*"))
	if len(leftovers) != 0 {
		t.Errorf("temporary entries left: %v", leftovers)
	}
}

// TestBdUsed: the method text names the bd, and for a real one how each
// tracker got into it.
func TestBdUsed(t *testing.T) {
	if s := bdUsed("stand-in bd", nil); !strings.Contains(s, "stand-in bd (`internal/testkit/fakebd`)") {
		t.Errorf("stand-in: %q", s)
	}
	small := &moved{Seeded: standin.Seeded{Issues: 50}, Imported: 50, Version: "bd version 1.0.5", BeadsAfter: 200 << 10}
	large := &moved{Seeded: standin.Seeded{Issues: 5000}, Imported: 4999, Version: "bd version 1.0.5", BeadsBefore: 516 << 20, BeadsAfter: 3 << 20, Cached: true}
	s := bdUsed("real bd 1.0.5", small, large)
	if strings.Count(s, "real bd holds") != 1 {
		t.Errorf("bdUsed = %q: want the one short import, only, said", s)
	}
	for _, want := range []string{"real bd 1.0.5 (`bd version 1.0.5`) in embedded mode", "of 50 issues", "of 5000 issues", "200 KB", "516.0 MB", "copied from the bench's cache", "flattened", "real bd holds 4999 of the 5000 issues"} {
		if !strings.Contains(s, want) {
			t.Errorf("bdUsed = %q, want %q in it", s, want)
		}
	}
}

func TestParseFlagsRealBD(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		err       string
		cache     string // relative to the repo, "" for none
		wantFleet bool
	}{
		{args: []string{"-bin", "b", "-repo", "/r"}, cache: ".tools/bench-cache", wantFleet: true},
		{args: []string{"-bin", "b", "-repo", "/r", "-only", "fleet", "-real-bd", "/x/bd", "-dolt", "/x/dolt"}, cache: ".tools/bench-cache", wantFleet: true},
		{args: []string{"-bin", "b", "-repo", "/r", "-only", "tracker", "-cache", "off"}},
		{args: []string{"-bin", "b", "-repo", "/r", "-dolt", "/x/dolt"}, err: "-dolt needs -real-bd"},
		{args: []string{"-bin", "b", "-repo", "/r", "-only", "fleets"}, err: "unknown section"},
	} {
		o, err := parseFlags(tc.args)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		want := ""
		if tc.cache != "" {
			want = filepath.Join("/r", tc.cache)
		}
		if o.cache != want || o.want("fleet") != tc.wantFleet {
			t.Errorf("%q: cache %q, want %q; fleet %v", tc.args, o.cache, want, o.want("fleet"))
		}
	}
}
