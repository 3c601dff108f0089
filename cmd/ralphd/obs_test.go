package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/rogpeppe/go-internal/testscript"
)

var urlRE = regexp.MustCompile(`http://[0-9.:\[\]a-z]+/`)

// cmdHTTPGet fetches a URL and prints the body to stdout, failing unless the
// status is the expected one (200 by default); -post FORM sends a POST with
// that urlencoded body instead:
//
//	httpget [-status N] [-H 'Name: value'] [-from FILE] [-post FORM] URL-OR-PATH
//
// With -from, the first http://host:port/ URL in FILE (a log the server
// printed) is the base and the argument is a path on it. Redirects are not
// followed, so a ?token= visit shows its 303 and cookie; -v prints the
// status and the headers before the body.
func cmdHTTPGet(ts *testscript.TestScript, neg bool, args []string) {
	want, verbose := 200, false
	method, form := "GET", ""
	var hdr []string
	base := ""
	for len(args) > 1 {
		switch args[0] {
		case "-status":
			n, err := strconv.Atoi(args[1])
			if err != nil {
				ts.Fatalf("bad status %q", args[1])
			}
			want, args = n, args[2:]
		case "-H":
			hdr, args = append(hdr, args[1]), args[2:]
		case "-from":
			m := urlRE.FindString(ts.ReadFile(args[1]))
			if m == "" {
				ts.Fatalf("no URL in %s", args[1])
			}
			base, args = strings.TrimSuffix(strings.Replace(m, "0.0.0.0", "127.0.0.1", 1), "/"), args[2:]
		case "-v":
			verbose, args = true, args[1:]
		case "-post":
			method, form, args = "POST", args[1], args[2:]
		default:
			ts.Fatalf("usage: httpget [-status N] [-H 'Name: value'] [-from FILE] [-v] URL")
		}
	}
	if len(args) != 1 {
		ts.Fatalf("usage: httpget [-status N] [-H 'Name: value'] [-from FILE] [-v] URL")
	}
	req, err := http.NewRequest(method, base+args[0], strings.NewReader(form))
	ts.Check(err)
	if method == "POST" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for _, h := range hdr {
		k, v, _ := strings.Cut(h, ":")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if strings.EqualFold(k, "Host") {
			req.Host = v // net/http sends req.Host, not a Host header
			continue
		}
		req.Header.Set(k, v)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	ts.Check(err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	ts.Check(err)
	if verbose {
		fmt.Fprintf(ts.Stdout(), "status %d\n", resp.StatusCode)
		for k, vs := range resp.Header {
			for _, v := range vs {
				fmt.Fprintf(ts.Stdout(), "%s: %s\n", k, v)
			}
		}
	}
	_, _ = ts.Stdout().Write(body)
	if (resp.StatusCode == want) == neg {
		ts.Fatalf("GET %s: status %d, want %d\n%s", req.URL, resp.StatusCode, want, body)
	}
}

// cmdPromlint lints a file of Prometheus text exposition as `promtool
// check metrics` does (the same promlint rules, in process): it fails if
// the text does not parse or if any problem is found, listing them all:
// `promlint metrics.txt`.
func cmdPromlint(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: promlint FILE")
	}
	problems, err := promlint.New(strings.NewReader(ts.ReadFile(args[0]))).Lint()
	if err != nil {
		ts.Fatalf("promlint %s: parse: %v", args[0], err)
	}
	if len(problems) > 0 {
		var b strings.Builder
		for _, p := range problems {
			fmt.Fprintf(&b, "\n  %s: %s", p.Metric, p.Text)
		}
		ts.Fatalf("promlint %s: %d problem(s):%s", args[0], len(problems), b.String())
	}
}

// cmdHTTPSink starts a local HTTP server for the rest of the script and
// sets the env var NAME to its URL. It answers the codes given, in order,
// then 200, and writes each request as $WORK/sink/N (content type, a blank
// line, the body):
//
//	httpsink NAME [CODE...]
func cmdHTTPSink(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: httpsink NAME [CODE...]")
	}
	var codes []int
	for _, a := range args[1:] {
		n, err := strconv.Atoi(a)
		if err != nil {
			ts.Fatalf("bad code %q", a)
		}
		codes = append(codes, n)
	}
	dir := ts.MkAbs("sink")
	ts.Check(os.MkdirAll(dir, 0o755))
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		i := n
		n++
		mu.Unlock()
		_ = os.WriteFile(filepath.Join(dir, strconv.Itoa(i+1)), []byte(r.Header.Get("Content-Type")+"\n\n"+string(b)), 0o644)
		code := http.StatusOK
		if i < len(codes) {
			code = codes[i]
		}
		w.WriteHeader(code)
	}))
	ts.Defer(srv.Close)
	ts.Setenv(args[0], srv.URL)
}
