package standin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"github.com/ralphd/ralphd/internal/proc"
	"github.com/ralphd/ralphd/internal/text"
	"io"
	"math/big"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"
)

// parsePriority accepts 0-4 or P0-P4 as bd does.
func parsePriority(s string) (int, error) {
	t := strings.TrimSpace(s)
	if len(t) == 2 && (t[0] == 'P' || t[0] == 'p') {
		t = t[1:]
	}
	if len(t) == 1 && t[0] >= '0' && t[0] <= '4' {
		return int(t[0] - '0'), nil
	}
	return 0, fmt.Errorf("invalid priority %q (expected 0-4 or P0-P4, not words like high/medium/low)", s)
}

// base36 encodes b in lowercase base 36.
func base36(b []byte) string {
	return new(big.Int).SetBytes(b).Text(36)
}

// hashID derives a bd-style issue id suffix: base36 of a content hash.
func hashID(title, desc, actor string, t time.Time, nonce, length int) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s|%s|%s|%d|%d", title, desc, actor, t.UnixNano(), nonce)
	s := base36(h.Sum(nil))
	for len(s) < length {
		s = "0" + s
	}
	return s[:length]
}

// newUUIDv7 returns a time-ordered UUID like the comment ids bd prints.
func newUUIDv7(now time.Time, rnd io.Reader) (string, error) {
	var u [16]byte
	ms := uint64(now.UnixMilli())
	binary.BigEndian.PutUint64(u[:8], ms<<16)
	if _, err := io.ReadFull(rnd, u[6:]); err != nil {
		return "", fmt.Errorf("generate uuid: %w", err)
	}
	u[6] = (u[6] & 0x0f) | 0x70
	u[8] = (u[8] & 0x3f) | 0x80
	h := hex.EncodeToString(u[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], nil
}

var relTime = text.LazyRegexp(`^\+(\d+)([smhdw])$`)

// parseWhen parses bd's date forms: +6h, +1d, +2w, tomorrow, next monday,
// 2025-01-15, RFC3339.
func parseWhen(s string, now time.Time) (time.Time, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if m := relTime.FindStringSubmatch(t); m != nil {
		n, err := strconv.Atoi(m[1])
		if err != nil {
			return time.Time{}, fmt.Errorf("invalid time %q: %w", s, err)
		}
		unit := map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour, "w": 7 * 24 * time.Hour}[m[2]]
		return now.Add(time.Duration(n) * unit), nil
	}
	switch t {
	case "now":
		return now, nil
	case "today":
		return now, nil
	case "tomorrow":
		return now.Add(24 * time.Hour), nil
	}
	if rest, ok := strings.CutPrefix(t, "next "); ok {
		for d := time.Sunday; d <= time.Saturday; d++ {
			if strings.ToLower(d.String()) == rest {
				days := (int(d) - int(now.Weekday()) + 7) % 7
				if days == 0 {
					days = 7
				}
				return now.AddDate(0, 0, days), nil
			}
		}
	}
	for _, layout := range []string{time.RFC3339Nano, time.RFC3339, "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02"} {
		if v, err := time.ParseInLocation(layout, strings.TrimSpace(s), time.Local); err == nil {
			return v, nil
		}
	}
	return time.Time{}, fmt.Errorf("invalid time %q (use +6h, +1d, +2w, tomorrow, next monday, or 2025-01-15)", s)
}

// runGit runs git with args in dir and returns its stdout. The process
// gets its own process group, which ctx cancellation kills as a whole.
func runGit(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = env
	proc.SetGroup(cmd)
	proc.EndGroupOnCancel(cmd, 0)
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return out.String(), nil
}

// gitConfig reads git config keys matching pattern in dir. It returns an
// empty map when git is missing or dir is not a repository.
func gitConfig(ctx context.Context, dir string, env []string, pattern string) map[string]string {
	out, _ := runGit(ctx, dir, env, "config", "--get-regexp", pattern)
	vals := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, " "); ok {
			vals[strings.ToLower(k)] = v
		}
	}
	return vals
}

// gitTopLevel returns the work tree root of dir, or "" outside git.
func gitTopLevel(ctx context.Context, dir string, env []string) string {
	out, err := runGit(ctx, dir, env, "rev-parse", "--show-toplevel")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// testTitle matches titles bd treats as test data.
var testTitle = text.LazyRegexp(`^(test|benchmark|sample|tmp|temp|debug|dummy)[-_\s]`)

// uniqueSorted returns the distinct non-empty values of in, sorted.
func uniqueSorted(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		s = strings.TrimSpace(s)
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// containsStr reports whether list holds s.
func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
