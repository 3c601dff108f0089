package beads

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// VerifiedVersions are the bd versions ralphd is built and tested against:
// the recorded contract (the stand-in's testdata/contract) comes from
// them. Any other version works as far as `ralphd doctor --bd` says.
var VerifiedVersions = []string{"1.0.5"}

// Version is what `bd version` says.
type Version struct {
	// Number is the version proper, without a leading "v": "1.0.5",
	// "1.3.0-rc.1".
	Number string
	// Line is bd's whole first line, for messages.
	Line string
}

// Verified reports whether ralphd is verified against this version.
func (v Version) Verified() bool { return slices.Contains(VerifiedVersions, v.Number) }

// TrustedClaims reports whether a claim's answer from this bd can be taken
// as who holds the issue, with no reading after it: for the versions ralphd
// is verified against, whose claims were recorded atomic and their answers
// true in embedded and server mode, under 8-way races (the contract's
// claim-race records). bd 1.0.3's `ready --claim` was not atomic (two
// workers could both be told they hold one issue; fixed in 1.0.4,
// GH-3570), so for any other version a claim is read back.
func (v Version) TrustedClaims() bool { return v.Verified() }

// String returns the version number.
func (v Version) String() string { return v.Number }

// maxVersionLen bounds a version number: it names a state file.
const maxVersionLen = 64

// ParseVersion reads the first line of `bd version`: "bd version 1.0.5
// (6a3f515: v1.0.5@6a3f515ced18)", or "bd version 1.0.5 (dev)" for a build
// by hand. The number must start with a digit (after an optional "v") and
// hold only letters, digits and ".+-_"; anything else is not bd's answer.
func ParseVersion(out []byte) (Version, error) {
	line, _, _ := bytes.Cut(bytes.TrimSpace(out), []byte("\n"))
	text := strings.TrimSpace(string(line))
	rest, ok := strings.CutPrefix(text, "bd version ")
	if !ok {
		return Version{}, newBadJSON(out, `want "bd version <number>"`)
	}
	num, _, _ := strings.Cut(strings.TrimSpace(rest), " ")
	num = strings.TrimPrefix(num, "v")
	if !validVersion(num) {
		return Version{}, newBadJSON(out, "want a version number after \"bd version\", got %q", num)
	}
	return Version{Number: num, Line: text}, nil
}

// validVersion reports whether s can be a version number: it starts with
// a digit, has at most maxVersionLen bytes, and holds only ASCII letters,
// digits and ".+-_".
func validVersion(s string) bool {
	if s == "" || len(s) > maxVersionLen || s[0] < '0' || s[0] > '9' {
		return false
	}
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', strings.ContainsRune(".+-_", r):
		default:
			return false
		}
	}
	return true
}

// versions caches ReadVersion per binary: bd is asked once per process.
var versions sync.Map // absolute bin path → Version

// ReadVersion runs `bd version` for the bd binary bin (resolved like
// LookPath) and parses its answer. The answer is kept for the life of the
// process, so later callers (KeepLease) ask bd nothing more.
func ReadVersion(ctx context.Context, bin string) (Version, error) {
	path, err := LookPath(bin)
	if err != nil {
		return Version{}, err
	}
	if v, ok := versions.Load(path); ok {
		return v.(Version), nil
	}
	r, err := runRaw(ctx, runSpec{bin: path, args: []string{"version"}, timeout: DefaultTimeout})
	if err != nil {
		return Version{}, err
	}
	if r.code != 0 {
		return Version{}, fmt.Errorf("bd version exited with code %d: %s", r.code, stderrSummary(string(r.stderr)))
	}
	v, err := ParseVersion(r.stdout)
	if err != nil {
		return Version{}, fmt.Errorf("bd version: %w", err)
	}
	versions.Store(path, v)
	return v, nil
}
