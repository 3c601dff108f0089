package bench

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSize parses a byte count: a plain number, or one with a binary
// suffix (K, M, G, T, optionally followed by "iB" or "B"): "100M" and
// "100MiB" are 100 × 2^20 bytes.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "i")
	shift := 0
	if t != "" {
		switch t[len(t)-1] {
		case 'K', 'k':
			shift = 10
		case 'M', 'm':
			shift = 20
		case 'G', 'g':
			shift = 30
		case 'T', 't':
			shift = 40
		}
		if shift > 0 {
			t = t[:len(t)-1]
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("parse size %q: want a number of bytes like 1048576, 100M or 4GiB", s)
	}
	if n > (1<<63-1)>>shift {
		return 0, fmt.Errorf("parse size %q: too large", s)
	}
	return n << shift, nil
}

// FormatSize formats a byte count with a binary unit: 4 GiB, 100 MiB,
// 15.2 MiB.
func FormatSize(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	v := float64(n)
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d %s", int64(v), units[i])
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}
