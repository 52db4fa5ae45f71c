package main

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Benchmarks of each endpoint through the whole handler (middleware, store, SQLite),
// without the network, for profiling with -cpuprofile and -memprofile. compare.sh in
// ../shared/bench measures the same endpoints over HTTP against the original service.

// benchEnv is a quiet service with the 50-field form of compare.sh and n responses.
func benchEnv(b *testing.B, responses int) (*testEnv, FormDetail) {
	b.Helper()
	e := newTestEnv(b)
	e.srv.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	f := e.createForm(seedFormBody())
	body := submitBody(f)
	for range responses {
		if status, raw := e.do("POST", "/api/forms/"+itoa(f.ID)+"/responses", body); status != 201 {
			b.Fatalf("seed: %d %s", status, raw)
		}
	}
	return e, f
}

// seedFormBody is seed.mjs's form: 5 categories of 10 fields, types cycling.
func seedFormBody() map[string]any {
	types := []string{"text", "number", "date", "textarea", "boolean"}
	var cats []any
	for c := range 5 {
		var fields []any
		for i := range 10 {
			fd := map[string]any{"label": fmt.Sprintf("Question %d.%d", c+1, i+1), "type": types[(c*10+i)%5]}
			if i%2 == 0 {
				fd["description"] = fmt.Sprintf("Guidance for question %d.%d, shown in italics.", c+1, i+1)
			}
			fields = append(fields, fd)
		}
		cats = append(cats, map[string]any{"name": fmt.Sprintf("Section %d", c+1), "fields": fields})
	}
	return map[string]any{"title": "Site inspection report", "description": "Benchmark form", "categories": cats}
}

// submitBody answers every field of f, as seed.mjs does.
func submitBody(f FormDetail) string {
	var parts []string
	for _, c := range f.Categories {
		for _, fd := range c.Fields {
			v := map[string]string{"text": `"Answer text for the field"`, "number": "42.5", "date": `"2026-11-25"`,
				"textarea": `"A longer answer, written over a few sentences to look like a real one."`, "boolean": "true"}[fd.Type]
			parts = append(parts, fmt.Sprintf(`"%d": %s`, fd.ID, v))
		}
	}
	return `{"values": {` + strings.Join(parts, ", ") + `}}`
}

// serve runs one request through the handler and checks its status. The answer is
// counted and dropped, so that allocations are the handler's own, not a recorder's.
func serve(b *testing.B, h http.Handler, method, path, body string, want int) {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, r)
	w := &discardWriter{header: http.Header{}, status: http.StatusOK}
	h.ServeHTTP(w, req)
	if w.status != want {
		b.Errorf("%s %s = %d", method, path, w.status)
	}
}

// discardWriter is an http.ResponseWriter that keeps only the status and the size.
type discardWriter struct {
	header http.Header
	status int
	n      int64
}

func (w *discardWriter) Header() http.Header    { return w.header }
func (w *discardWriter) WriteHeader(status int) { w.status = status }
func (w *discardWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}

func BenchmarkFormRead(b *testing.B) {
	e, f := benchEnv(b, 0)
	b.ReportAllocs()
	for b.Loop() {
		serve(b, e.srv, "GET", "/api/forms/"+itoa(f.ID), "", 200)
	}
}

func BenchmarkSubmit(b *testing.B) {
	e, f := benchEnv(b, 0)
	body := submitBody(f)
	b.ReportAllocs()
	for b.Loop() {
		serve(b, e.srv, "POST", "/api/forms/"+itoa(f.ID)+"/responses", body, 201)
	}
}

// BenchmarkSubmitParallel submits from 32 goroutines at once, as compare.sh's 32
// connections do, where submits share transactions.
func BenchmarkSubmitParallel(b *testing.B) {
	e, f := benchEnv(b, 0)
	body := submitBody(f)
	b.ReportAllocs()
	b.SetParallelism(16) // × GOMAXPROCS 2 = 32 goroutines
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			serve(b, e.srv, "POST", "/api/forms/"+itoa(f.ID)+"/responses", body, 201)
		}
	})
}

// BenchmarkListResponses shows the list's cost per call growing linearly with the
// number of responses (50 values each).
func BenchmarkListResponses(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("responses=%d", n), func(b *testing.B) {
			e, f := benchEnv(b, n)
			b.ReportAllocs()
			for b.Loop() {
				serve(b, e.srv, "GET", "/api/forms/"+itoa(f.ID)+"/responses", "", 200)
			}
		})
	}
}

func BenchmarkExportPDFEndpoint(b *testing.B) {
	e, f := benchEnv(b, 1)
	var list []listedResponse
	e.doJSON("GET", "/api/forms/"+itoa(f.ID)+"/responses", nil, &list)
	b.ReportAllocs()
	for b.Loop() {
		serve(b, e.srv, "GET", "/api/responses/"+itoa(list[0].ID)+"/export/pdf", "", 200)
	}
}
