package agent

import (
	"github.com/ralphd/ralphd/internal/text"
	"strconv"
	"strings"
	"time"
)

// Patterns for reset times in limit messages. They are best effort: agent
// CLIs change their wording, and an unparsed time only means ralphd falls
// back to its own backoff.
var (
	// "Claude AI usage limit reached|1795366800" (older Claude Code).
	reEpochReset = text.LazyRegexp(`(?i)limit reached\|(\d{9,11})\b`)
	// "resets 3pm (Europe/Berlin)", "resets at 3:30 pm", "resets Nov 22, 3pm (UTC)",
	// "try again at 3:04 PM". A clock time needs am/pm or minutes.
	reClockReset = text.LazyRegexp(`(?i)(?:resets?|try again|retry)\s+(?:at\s+|on\s+)?` +
		`(?:(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(?:(\d{4}),?\s+)?(?:at\s+)?)?` +
		`(\d{1,2})(?::(\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)?(?:\s*\(([^)\s]+)\))?`)
	// "try again in 4 days 20 hours", "resets in 2h 5m", "retry in 30s".
	reRelReset = text.LazyRegexp(`(?i)(?:resets?|try again|retry)\s+in\s+((?:\d+(?:\.\d+)?\s*(?:days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)\b[\s,]*(?:and\s+)?)+)`)
	reRelPart  = text.LazyRegexp(`(?i)(\d+(?:\.\d+)?)\s*(days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)\b`)
)

var monthIndex = map[string]time.Month{
	"jan": time.January, "feb": time.February, "mar": time.March, "apr": time.April,
	"may": time.May, "jun": time.June, "jul": time.July, "aug": time.August,
	"sep": time.September, "oct": time.October, "nov": time.November, "dec": time.December,
}

// parseResetText looks for a quota reset time in a message such as
// "You've hit your limit · resets 3pm (Europe/Berlin)" and returns it,
// relative to now. A clock time without a date is the next such time after
// now in the named zone (or now's zone when none is named or the zone is
// unknown); with a month and day, the next such date. Relative forms
// ("try again in 4 days 20 hours") and the older "limit reached|<unix
// seconds>" form are understood too.
//
// rounded reports a time read from text that gives it only to the minute
// (a clock time, "resets in 2h 5m"): the reset may come up to a minute
// later than the time returned. An epoch second, or a relative time with
// seconds in it, is exact.
func parseResetText(s string, now time.Time) (reset time.Time, rounded, ok bool) {
	if m := reEpochReset.FindStringSubmatch(s); m != nil {
		if n, err := strconv.ParseInt(m[1], 10, 64); err == nil {
			return time.Unix(n, 0), false, true
		}
	}
	if m := reRelReset.FindStringSubmatch(s); m != nil {
		var d time.Duration
		seconds := false
		for _, p := range reRelPart.FindAllStringSubmatch(m[1], -1) {
			n, err := strconv.ParseFloat(p[1], 64)
			if err != nil {
				continue
			}
			unit := unitOf(p[2])
			seconds = seconds || unit == time.Second
			d += time.Duration(n * float64(unit))
		}
		if d > 0 {
			return now.Add(d), !seconds, true
		}
	}
	for _, m := range reClockReset.FindAllStringSubmatch(s, -1) {
		if t, ok := clockReset(m, now); ok {
			return t, true, true
		}
	}
	return time.Time{}, false, false
}

// ExactResetSlack is what QuotaWait adds to a reset time the agent gave
// exactly, for clock skew between the provider and this machine.
const ExactResetSlack = 3 * time.Second

// RoundedResetSlack is what QuotaWait adds to a reset time read from text
// rounded to the minute, and the least it waits for one.
const RoundedResetSlack = time.Minute

// QuotaWait is how long to wait, at now, for a quota that resets at reset:
// until the reset plus ExactResetSlack when the agent gave the instant
// exactly (Claude's rate_limit_event resetsAt, a retry delay), or plus
// RoundedResetSlack, and never less, when the time was read from text
// rounded to the minute (see Outcome.ResetRounded). A reset already past
// waits only the slack.
func QuotaWait(now, reset time.Time, rounded bool) time.Duration {
	slack := ExactResetSlack
	if rounded {
		slack = RoundedResetSlack
	}
	return max(reset.Sub(now), 0) + slack
}

// unitOf maps a unit word of reRelPart to its duration.
func unitOf(u string) time.Duration {
	switch strings.ToLower(u)[0] {
	case 'd':
		return 24 * time.Hour
	case 'h':
		return time.Hour
	case 'm':
		return time.Minute
	default:
		return time.Second
	}
}

// clockReset turns one reClockReset match into a time after now.
func clockReset(m []string, now time.Time) (time.Time, bool) {
	month, day, year, hs, ms, ampm, zone := m[1], m[2], m[3], m[4], m[5], m[6], m[7]
	if ms == "" && ampm == "" {
		return time.Time{}, false // "resets 5" is not a clock time
	}
	hour, _ := strconv.Atoi(hs)
	minute, _ := strconv.Atoi(ms)
	if minute > 59 {
		return time.Time{}, false
	}
	switch strings.ToLower(strings.ReplaceAll(ampm, ".", "")) {
	case "am":
		if hour < 1 || hour > 12 {
			return time.Time{}, false
		}
		hour %= 12
	case "pm":
		if hour < 1 || hour > 12 {
			return time.Time{}, false
		}
		hour = hour%12 + 12
	default:
		if hour > 23 {
			return time.Time{}, false
		}
	}
	loc := now.Location()
	if zone != "" {
		if l, err := time.LoadLocation(zone); err == nil {
			loc = l
		}
	}
	local := now.In(loc)
	if month != "" {
		mon := monthIndex[strings.ToLower(month[:3])]
		d, _ := strconv.Atoi(day)
		if d < 1 || d > 31 {
			return time.Time{}, false
		}
		if year != "" {
			// Codex 0.169.0 names the year when the reset is on another
			// day: "Try again at Nov 24th, 2026 12:10 AM."
			y, _ := strconv.Atoi(year)
			if y < local.Year()-1 || y > local.Year()+1 {
				return time.Time{}, false
			}
			return time.Date(y, mon, d, hour, minute, 0, 0, loc), true
		}
		t := time.Date(local.Year(), mon, d, hour, minute, 0, 0, loc)
		// A date more than a day in the past means next year
		// ("resets Jan 2" read on Dec 30).
		if t.Before(local.Add(-24 * time.Hour)) {
			t = t.AddDate(1, 0, 0)
		}
		return t, true
	}
	t := time.Date(local.Year(), local.Month(), local.Day(), hour, minute, 0, 0, loc)
	// A clock time in the minute just gone is a reset rounded down to the
	// minute, not one a day away: Codex 0.169.0 writes "Try again at 8:49
	// PM." for a reset at 20:49:50, read at 20:49:51.
	if !t.After(local) && local.Sub(t) >= justGone {
		t = t.AddDate(0, 0, 1)
	}
	return t, true
}

// justGone is how long ago a clock time without a date may be and still
// mean the reset just happened (it was rounded down to the minute and
// read a little later).
const justGone = 2 * time.Minute
