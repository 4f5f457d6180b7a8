// Command cron-oracle writes robfig/cron/v3's answers for generated schedules, the fixture
// crates/cronjob/src/schedule/robfig_cases.tsv that kcm-rs's schedule tests compare with.
//
// Usage: go run . [-seed N] [-n COUNT] > ../../crates/cronjob/src/schedule/robfig_cases.tsv
//
// Each line: schedule, instant (RFC 3339, nanoseconds), then robfig's next instant in UTC
// (RFC 3339), "never" for its zero time, or "error: <message>" when ParseStandard refuses the
// schedule.
package main

import (
	"flag"
	"fmt"
	"math/rand"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

var zones = []string{"", "UTC", "America/New_York", "Europe/London", "Australia/Lord_Howe", "America/Sao_Paulo", "Asia/Kolkata", "Pacific/Chatham"}

var monthNames = []string{"jan", "FEB", "Mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}
var dayNames = []string{"sun", "MON", "Tue", "wed", "thu", "fri", "sat"}

func value(r *rand.Rand, lo, hi int, names []string) string {
	v := lo + r.Intn(hi-lo+1)
	if names != nil && r.Intn(3) == 0 {
		return names[v-lo]
	}
	return fmt.Sprint(v)
}

// ordered gives a range's ends, reversed one time in ten.
func ordered(r *rand.Rand, lo, hi int, names []string) (string, string) {
	a, b := lo+r.Intn(hi-lo+1), lo+r.Intn(hi-lo+1)
	if a > b && r.Intn(10) != 0 {
		a, b = b, a
	}
	name := func(v int) string {
		if names != nil && r.Intn(3) == 0 {
			return names[v-lo]
		}
		return fmt.Sprint(v)
	}
	return name(a), name(b)
}

// item is one comma-separated part of a field, sometimes out of range or malformed.
func item(r *rand.Rand, lo, hi int, names []string) string {
	switch r.Intn(12) {
	case 0:
		return "*"
	case 1:
		return "?"
	case 2:
		return fmt.Sprintf("*/%d", r.Intn(hi-lo+2))
	case 3, 4, 5:
		a, b := ordered(r, lo, hi, names)
		if r.Intn(2) == 0 {
			return fmt.Sprintf("%s-%s/%d", a, b, 1+r.Intn(5))
		}
		return a + "-" + b
	case 6:
		return fmt.Sprintf("%s/%d", value(r, lo, hi, names), 1+r.Intn(10))
	case 7:
		if r.Intn(8) == 0 {
			return fmt.Sprint(hi + 1)
		}
		return value(r, lo, hi, names)
	default:
		return value(r, lo, hi, names)
	}
}

func field(r *rand.Rand, lo, hi int, names []string) string {
	if r.Intn(3) == 0 {
		return "*"
	}
	n := 1 + r.Intn(3)
	parts := make([]string, n)
	for i := range parts {
		parts[i] = item(r, lo, hi, names)
	}
	return strings.Join(parts, ",")
}

func schedule(r *rand.Rand) string {
	var s string
	switch r.Intn(10) {
	case 0:
		s = []string{"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}[r.Intn(7)]
	case 1:
		s = []string{"@every 1h30m", "@every 90s", "@every 1.5h", "@every 500ms", "@every 2m3.7s", "@every 24h"}[r.Intn(6)]
	default:
		s = strings.Join([]string{
			field(r, 0, 59, nil), field(r, 0, 23, nil), field(r, 1, 31, nil),
			field(r, 1, 12, monthNames), field(r, 0, 6, dayNames),
		}, " ")
	}
	if z := zones[r.Intn(len(zones))]; z != "" {
		prefix := "TZ="
		if r.Intn(2) == 0 {
			prefix = "CRON_TZ="
		}
		s = prefix + z + " " + s
	}
	return s
}

// instant is a time between 2010 and 2030, often close to a daylight-saving transition.
func instant(r *rand.Rand) time.Time {
	base := time.Date(2010, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	span := int64(20 * 365 * 24 * 3600)
	t := time.Unix(base+r.Int63n(span), int64(r.Intn(3))*500_000_000).UTC()
	if r.Intn(2) == 0 {
		// Near the usual transitions: March, April, October, November, at a whole hour or so.
		month := []time.Month{time.March, time.April, time.October, time.November}[r.Intn(4)]
		t = time.Date(t.Year(), month, 1+r.Intn(30), r.Intn(24), []int{0, 30, 59}[r.Intn(3)], 0, 0, time.UTC)
	}
	return t
}

func main() {
	seed := flag.Int64("seed", 1, "random seed")
	n := flag.Int("n", 2000, "cases")
	flag.Parse()
	// The schedules without TZ= are read in UTC, as kcm-rs's tests read them.
	time.Local = time.UTC
	r := rand.New(rand.NewSource(*seed))
	for i := 0; i < *n; i++ {
		s := schedule(r)
		t := instant(r)
		var answer string
		sched, err := cron.ParseStandard(s)
		switch {
		case err != nil:
			answer = "error: " + err.Error()
		default:
			next := sched.Next(t)
			if next.IsZero() {
				answer = "never"
			} else {
				answer = next.UTC().Format(time.RFC3339)
			}
		}
		fmt.Printf("%s\t%s\t%s\n", s, t.Format(time.RFC3339Nano), answer)
	}
}
