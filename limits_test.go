package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestFormLimits: past each limit of docs/DESIGN.md a create or update is answered as
// the table says, and nothing is stored or changed; at the limit it is accepted.
func TestFormLimits(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	existing := e.createForm(fullForm())
	field := func(label, desc string) map[string]any {
		return map[string]any{"label": label, "type": "text", "description": desc}
	}
	cats := func(n, fieldsEach int) []any {
		var cs []any
		for range n {
			var fs []any
			for i := range fieldsEach {
				fs = append(fs, field(fmt.Sprint("f", i), ""))
			}
			cs = append(cs, map[string]any{"name": "c", "fields": fs})
		}
		return cs
	}
	long := func(n int) string { return strings.Repeat("é", n) } // characters, not bytes
	for _, tc := range []struct {
		name   string
		body   map[string]any
		status int
		msg    string
	}{
		{"title at the limit", map[string]any{"title": long(maxTitleChars)}, 201, ""},
		{"title too long", map[string]any{"title": long(maxTitleChars + 1)}, 400, fmt.Sprintf("Form title is too long (at most %d characters)", maxTitleChars)},
		{"description too long", map[string]any{"title": "t", "description": long(maxDescriptionChars + 1)}, 400, fmt.Sprintf("Form description is too long (at most %d characters)", maxDescriptionChars)},
		{"categories at the limit", map[string]any{"title": "t", "categories": cats(maxCategories, 0)}, 201, ""},
		{"too many categories", map[string]any{"title": "t", "categories": cats(maxCategories+1, 0)}, 400, fmt.Sprintf("Too many categories (at most %d)", maxCategories)},
		{"fields at the limit", map[string]any{"title": "t", "categories": cats(10, maxFields/10)}, 201, ""},
		{"too many fields", map[string]any{"title": "t", "categories": cats(10, maxFields/10+1)}, 400, fmt.Sprintf("Too many fields (at most %d in a form)", maxFields)},
		{"label too long", map[string]any{"title": "t", "categories": []any{map[string]any{"fields": []any{field(long(maxLabelChars+1), "")}}}}, 500, fmt.Sprintf("Failed to %%s: Field label is too long (at most %d characters)", maxLabelChars)},
		{"field description too long", map[string]any{"title": "t", "categories": []any{map[string]any{"fields": []any{field("l", long(maxDescriptionChars+1))}}}}, 500, fmt.Sprintf("Failed to %%s: Field description is too long (at most %d characters)", maxDescriptionChars)},
		{"category name too long", map[string]any{"title": "t", "categories": []any{map[string]any{"name": long(maxLabelChars + 1)}}}, 500, fmt.Sprintf("Failed to %%s: Category name is too long (at most %d characters)", maxLabelChars)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, target := range []struct{ method, path, op string }{{"POST", "/api/forms", "create form"}, {"PUT", "/api/forms/" + itoa(existing.ID), "update form " + itoa(existing.ID)}} {
				if tc.status == 201 {
					if status, reply := e.do(target.method, target.path, tc.body); status >= 300 {
						t.Errorf("%s %s = %d %.200s, want 2xx",
							target.method, target.path, status, reply)
					}
					continue
				}
				before := e.snapshot()
				want := strings.ReplaceAll(tc.msg, "%s", target.op)
				e.wantError(target.method, target.path, tc.body, tc.status, want)
				if e.snapshot() != before {
					t.Errorf("%s %s refused but changed the database", target.method, target.path)
				}
			}
		})
	}
}

// TestListsAcrossPages: lists longer than a page, and pages cut by the bytes of their
// values, read back whole, newest first, each item once, in the JSON list and the CSV; a
// summary page asked for above maxSummaryPage holds maxSummaryPage.
func TestListsAcrossPages(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	var formIDs []int64
	for range listPageRows*2 + 3 {
		formIDs = append(formIDs, e.createForm(map[string]any{"title": "t"}).ID)
	}
	var forms []Form
	if status := e.doJSON("GET", "/api/forms", nil, &forms); status != 200 || len(forms) != len(formIDs) {
		t.Fatalf("GET /api/forms = %d with %d forms, want %d", status, len(forms), len(formIDs))
	}
	for i, f := range forms {
		if want := formIDs[len(formIDs)-1-i]; f.ID != want {
			t.Fatalf("forms[%d] = %d, want %d (newest first, each once)", i, f.ID, want)
		}
	}

	f := e.createForm(fullForm())
	field := itoa(f.Categories[0].Fields[0].ID)
	big := strings.Repeat("v", listPageBytes/3) // a page cut after about three of these
	var ids []int64
	for i := range listPageRows + 20 {
		value := "small"
		if i%10 == 0 {
			value = big
		}
		ids = append(ids, e.submit(f.ID, map[string]any{field: value}))
	}
	var list []struct {
		ID     int64                      `json:"id"`
		Values map[string]json.RawMessage `json:"values"`
	}
	if status := e.doJSON("GET", "/api/forms/"+itoa(f.ID)+"/responses", nil, &list); status != 200 || len(list) != len(ids) {
		t.Fatalf("response list = %d with %d responses, want %d", status, len(list), len(ids))
	}
	for i, r := range list {
		if want := ids[len(ids)-1-i]; r.ID != want || len(r.Values) != 1 {
			t.Fatalf("responses[%d] = %d with %d values, want %d with 1", i, r.ID, len(r.Values), want)
		}
	}
	res, body := e.getRaw("/api/forms/" + itoa(f.ID) + "/responses.csv")
	if rows := strings.Count(string(body), "\n"); res.StatusCode != 200 || rows != len(ids)+1 {
		t.Errorf("CSV = %d with %d lines, want %d", res.StatusCode, rows, len(ids)+1)
	}

	day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range maxSummaryPage + 20 {
		if err := e.store.SaveTrackerSummary(context.Background(), day.AddDate(0, 0, i), "text"); err != nil {
			t.Fatal(err)
		}
	}
	var page struct{ Summaries []Summary } // its total: TestSummaryLists
	e.doJSON("GET", "/api/tracker-summaries?limit=1000", nil, &page)
	if len(page.Summaries) != maxSummaryPage {
		t.Errorf("limit=1000 = %d summaries, want %d", len(page.Summaries), maxSummaryPage)
	}
}

// TestBusyResourcesRefuseWhatTheyBound: with a shared resource taken past its wait, each
// request it bounds is refused 503 Server busy with Retry-After, storing nothing, while the
// others are answered at once; one let in while it waits is answered once it is free. The
// room for large bodies bounds large bodies; the heavy slots every answer that may be large
// and no write; the one write connection every route that stores.
func TestBusyResourcesRefuseWhatTheyBound(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	f := e.createForm(fullForm())
	field := itoa(f.Categories[0].Fields[0].ID)
	type call struct {
		method, path string
		body         any
	}
	submit := func(value string) call {
		values := map[string]any{"values": map[string]any{field: value}}
		return call{"POST", "/api/forms/" + itoa(f.ID) + "/responses", values}
	}
	responseID := e.submit(f.ID, map[string]any{field: "x"})
	var fields []any
	for i := range 20 { // JSON writes a byte of text in 6 at most: past largeAnswer
		fields = append(fields, map[string]any{"label": fmt.Sprint(i), "type": "text",
			"description": strings.Repeat("d", 1000)})
	}
	large := e.createForm(map[string]any{"title": "t", "categories": []any{map[string]any{"fields": fields}}})
	if err := e.srv.store.SaveTrackerSummary(t.Context(), startOfDay(e.srv.now()), "s"); err != nil {
		t.Fatal(err)
	}
	var heavy []call
	form := "/api/forms/" + itoa(f.ID)
	for _, path := range []string{"/api/responses/" + itoa(responseID) + "/export/pdf", form + "/responses",
		form + "/responses.csv", "/api/forms/" + itoa(large.ID), "/api/forms", "/api/settings/k",
		"/api/tracker-summary/today", "/api/tracker-summaries", "/api/email-summaries"} {
		heavy = append(heavy, call{"GET", path, nil})
	}
	var writes []call
	for route := range e.srv.routes() {
		method, pattern, _ := strings.Cut(route, " ")
		if method == "GET" || strings.HasSuffix(pattern, "/generate") { // generate stores later
			continue
		}
		path := strings.NewReplacer("{id}", itoa(f.ID), "{key}", "k").Replace(pattern)
		body := map[string]any{"title": "t", "values": map[string]any{field: "v"}, "value": "v"}
		writes = append(writes, call{method, path, body})
	}
	for _, tc := range []struct {
		name                      string
		wait                      *time.Duration
		occupy                    func() (release func())
		refused, answered, waiter []call // waiter: let in while the resource is taken
	}{
		{"room for large bodies", &e.srv.cfg.UploadWait,
			func() func() {
				ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
				defer cancel()
				if err := e.srv.uploads.Acquire(ctx, maxUploadBytes); err != nil {
					t.Fatal(err)
				}
				return func() { e.srv.uploads.Release(maxUploadBytes) }
			},
			[]call{submit(strings.Repeat("y", smallBodyBytes))}, []call{submit("small")},
			[]call{submit(strings.Repeat("z", smallBodyBytes))}},
		{"heavy slots", &e.srv.cfg.HeavyWait, func() func() { return occupyHeavy(t, e.srv) }, heavy, []call{
			{"GET", "/api/forms/" + itoa(f.ID), nil}, // a small form never waits
			{"PUT", "/api/settings/big", map[string]any{"value": strings.Repeat("é", 300_000)}},
			{"POST", "/api/forms", map[string]any{"title": strings.Repeat("\x01", maxTitleChars),
				"description": strings.Repeat("\x01", maxDescriptionChars)}},
			submit("v"),
			{"DELETE", "/api/forms/" + itoa(e.createForm(map[string]any{"title": "gone"}).ID), nil},
		}, heavy},
		{"write connection", &e.store.writeWait, func() func() {
			conn, err := e.store.write.Conn(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			return func() { conn.Close() }
		}, writes, []call{{"GET", "/api/forms/" + itoa(f.ID), nil}}, []call{submit("after")}},
	} {
		*tc.wait = 100 * time.Millisecond
		release := tc.occupy()
		before := e.snapshot()
		for _, c := range tc.refused {
			res, body := e.send(c.method, c.path, c.body)
			if res.StatusCode != 503 || res.Header.Get("Retry-After") != "1" ||
				!strings.Contains(string(body), "Server busy, retry later") {
				t.Errorf("%s taken: %s %s = %d %.80s (Retry-After %q), want 503 Server busy",
					tc.name, c.method, c.path, res.StatusCode, body, res.Header.Get("Retry-After"))
			}
		}
		if e.snapshot() != before {
			t.Errorf("%s taken: the refused requests changed the database", tc.name)
		}
		for _, c := range tc.answered {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
			res, body := e.request(ctx, c.method, c.path, c.body)
			cancel()
			if res == nil || res.StatusCode >= 300 {
				t.Errorf("%s taken: %s %s = %v %.80s, want an answer within 2 s",
					tc.name, c.method, c.path, res, body)
			}
		}
		*tc.wait = 10 * time.Second
		writeWaits := e.store.write.Stats().WaitCount
		statuses := make(chan int, len(tc.waiter))
		for _, c := range tc.waiter {
			go func() {
				res, _ := e.send(c.method, c.path, c.body)
				statuses <- res.StatusCode
			}()
		}
		// Until they wait (a semaphore with a waiter refuses even zero units, the write
		// connection counts its waits) or one is answered, which the check below judges.
		waitFor(t, func() bool {
			return !e.srv.uploads.TryAcquire(0) || !e.srv.slots.TryAcquire(0) || len(statuses) > 0 ||
				e.store.write.Stats().WaitCount > writeWaits
		})
		time.Sleep(300 * time.Millisecond) // past the short wait: the waiters wait the long one
		release()
		for range tc.waiter {
			if status := <-statuses; status >= 300 {
				t.Errorf("%s freed: a request let in while it was taken = %d, want 2xx", tc.name, status)
			}
		}
	}
}

// TestValueLimits: values at maxValueChars are stored, one past it is a 400 that stores
// nothing; a response whose PDF would pass pdfMaxPages (textareas of newlines at the value
// limit) is answered 500 with the limit named, nothing sent.
func TestValueLimits(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	textarea := map[string]any{"label": "Notes", "type": "textarea"}
	f := e.createForm(map[string]any{"title": "Long", "categories": []any{map[string]any{"fields": []any{textarea, textarea, textarea}}}})
	values := map[string]any{}
	for _, field := range f.Categories[0].Fields { // three times 50,000 lines: about 2,700 pages
		values[itoa(field.ID)] = strings.Repeat("x\n", maxValueChars/2)
	}
	id := e.submit(f.ID, values)
	want := fmt.Sprintf("Failed to generate PDF for response %d: PDF would be longer than %d pages", id, pdfMaxPages)
	e.wantError("GET", "/api/responses/"+itoa(id)+"/export/pdf", nil, 500, want)
	before := e.snapshot()
	values[itoa(f.Categories[0].Fields[0].ID)] = strings.Repeat("x", maxValueChars+1)
	want = fmt.Sprintf("Response value is too long (at most %d characters)", maxValueChars)
	e.wantError("POST", "/api/forms/"+itoa(f.ID)+"/responses", map[string]any{"values": values}, 400, want)
	if e.snapshot() != before {
		t.Error("a refused value changed the database")
	}
}

// TestDocumentedLimits: each number docs/DESIGN.md's "Limits" table and text state is the
// value the service runs with (TestFormLimits tries the form limits themselves).
func TestDocumentedLimits(t *testing.T) {
	t.Parallel()
	design := readDoc(t, "docs/DESIGN.md")
	num := strconv.Itoa
	size := func(n int) string {
		if n%(1<<20) == 0 {
			return fmt.Sprintf("%d MiB", n>>20)
		}
		return fmt.Sprintf("%d KiB", n>>10)
	}
	secs := func(d time.Duration) string { return fmt.Sprintf("%d s", int(d/time.Second)) }
	fracSecs := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " s" }
	defaults := testConfig(t, nil) // the tests' own config is faster
	e := newTestEnv(t)
	hs := newHTTPServer(e.srv.cfg, nil, e.srv.log)
	var busy int
	if err := e.store.write.QueryRow("PRAGMA busy_timeout").Scan(&busy); err != nil {
		t.Fatal(err)
	}
	var probe int // the size of the write /healthz tries, as a trigger on settings sees it
	_, err := e.store.write.Exec(`CREATE TABLE probes (size INTEGER); CREATE TRIGGER probe
		AFTER INSERT ON settings BEGIN INSERT INTO probes VALUES (length(NEW.value)); END`)
	if err != nil || e.store.ProbeWrite(context.Background()) != nil {
		t.Fatal(err)
	}
	if err := e.store.write.QueryRow(`SELECT size FROM probes`).Scan(&probe); err != nil {
		t.Fatal(err)
	}
	perf := readDoc(t, "docs/PERFORMANCE.md")
	for _, tc := range []struct {
		doc     []byte
		pattern string   // a regular expression whose groups are the documented values
		want    []string // the values of the code, as the document writes them
	}{
		{design, `\| request body \| ([^|]+) \|`, []string{size(maxBodyBytes)}},
		{design, `\| form title \| ([\d,]+) characters \|`, []string{num(maxTitleChars)}},
		{design, `\| form description \| ([\d,]+) characters \|`, []string{num(maxDescriptionChars)}},
		{design, `\| categories per form \| ([\d,]+) \|`, []string{num(maxCategories)}},
		{design, `\| fields per form, all categories \| ([\d,]+) \|`, []string{num(maxFields)}},
		{design, `\| field label, category name \| ([\d,]+) characters \|`, []string{num(maxLabelChars)}},
		{design, `\| field description \| ([\d,]+) characters \|`, []string{num(maxDescriptionChars)}},
		{design, `\| submitted value[^|]*\| ([\d,]+) characters \|`, []string{num(maxValueChars)}},
		{design, `\| summary page size[^|]*\| ([\d,]+) \|`, []string{num(maxSummaryPage)}},
		{design, `\| PDF pages \| ([\d,]+) \|`, []string{num(pdfMaxPages)}},
		{design, `names total at most ([\d,]+) letters`, []string{num(pdfNameBudget)}},
		{design, `\| open connections \| ([\d,]+) \|`, []string{num(maxConnections)}},
		{design, `\| large bodies[^|(]*\(over (\d+ KiB)[^|]*\| (\d+ MiB) \|[^|]*after waiting (\d+ s)`,
			[]string{size(smallBodyBytes), size(maxUploadBytes), secs(maxUploadWait)}},
		{design, `\| answers that may be large[^|(]*\(over (\d+ KiB)[^|]*\| (\d+) at once, each waiting at most (\d+ s) \|`,
			[]string{size(largeAnswer), num(heavySlots), secs(heavyWait)}},
		{design, `\| a write's wait for the one write connection \| (\d+ s) \(half the shutdown's grace\)`,
			[]string{secs(writeWait)}},
		{design, `Shutdown: requests in flight get up to (\d+ s);[^;]*waited for up to (\d+ s)`,
			[]string{secs(e.srv.cfg.RequestGrace), secs(e.srv.cfg.JobGrace)}},
		{design, `\| headers, whole body, whole answer or page of a list, idle connection \| (\d+ s), (\d+ s), (\d+ s), (\d+ s) \|`,
			[]string{secs(hs.ReadHeaderTimeout), secs(hs.ReadTimeout), secs(hs.WriteTimeout),
				secs(hs.IdleTimeout)}},
		{design, `\((\d+ s): the single writer waits them out\)`,
			[]string{secs(time.Duration(busy) * time.Millisecond)}},
		{design, `Outbound calls time out \((\d+ s)\)`, []string{secs(e.srv.cfg.OutboundTimeout)}},
		{design, `is retried twice, after ([\d.]+ s) and then ([\d.]+ s)`,
			[]string{fracSecs(defaults.OutboundRetryDelay), fracSecs(2 * defaults.OutboundRetryDelay)}},
		{design, `/healthz` + "`" + ` itself tries a write \((\d+ KiB) inserted`, []string{size(probe)}},
		{design, `written a page at a time \((\d+) rows,\s+and a page of responses ends after (\d+ KiB)`,
			[]string{num(listPageRows), size(listPageBytes)}},
		{perf, `form cache\*\* \(store.go, (\d+ MiB)`, []string{size(formCacheBytes)}},
	} {
		m := regexp.MustCompile(tc.pattern).FindStringSubmatch(string(tc.doc))
		for i := 1; i < len(m); i++ {
			m[i] = strings.ReplaceAll(m[i], ",", "") // 1,000 as the table writes it
		}
		if m == nil || !slices.Equal(m[1:], tc.want) {
			t.Errorf("%s = %q, the code %q", tc.pattern, m, tc.want)
		}
	}
	if e.srv.cfg.RequestGrace != 2*writeWait {
		t.Errorf("writeWait %v is not half the shutdown's grace %v", writeWait, e.srv.cfg.RequestGrace)
	}
}
