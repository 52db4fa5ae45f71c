package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"runtime"
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
	fields := func(n int) []any {
		var fs []any
		for i := range n {
			fs = append(fs, field(fmt.Sprint("f", i), ""))
		}
		return fs
	}
	cats := func(n, fieldsEach int) []any {
		var cs []any
		for range n {
			cs = append(cs, map[string]any{"name": "c", "fields": fields(fieldsEach)})
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
		{"empty categories past the limit", map[string]any{"title": "t", "categories": strings.Repeat("{},", 5000) + "{}"}, 400, fmt.Sprintf("Too many categories (at most %d)", maxCategories)},
		{"label too long", map[string]any{"title": "t", "categories": []any{map[string]any{"fields": []any{field(long(maxLabelChars+1), "")}}}}, 500, fmt.Sprintf("Failed to %%s: Field label is too long (at most %d characters)", maxLabelChars)},
		{"field description too long", map[string]any{"title": "t", "categories": []any{map[string]any{"fields": []any{field("l", long(maxDescriptionChars+1))}}}}, 500, fmt.Sprintf("Failed to %%s: Field description is too long (at most %d characters)", maxDescriptionChars)},
		{"category name too long", map[string]any{"title": "t", "categories": []any{map[string]any{"name": long(maxLabelChars + 1)}}}, 500, fmt.Sprintf("Failed to %%s: Category name is too long (at most %d characters)", maxLabelChars)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := tc.body
			if s, ok := body["categories"].(string); ok { // a raw JSON array, built as text
				raw, _ := json.Marshal(map[string]any{"title": body["title"]})
				body = nil
				for _, target := range []struct{ method, path, op string }{{"POST", "/api/forms", "create form"}, {"PUT", "/api/forms/" + itoa(existing.ID), "update form " + itoa(existing.ID)}} {
					before := e.snapshot()
					text := strings.TrimSuffix(string(raw), "}") + `,"categories":[` + s + `]}`
					status, reply := e.do(target.method, target.path, text)
					if status != tc.status || !strings.Contains(string(reply), tc.msg) || e.snapshot() != before {
						t.Errorf("%s %s = %d %s, want %d %q and nothing changed", target.method, target.path, status, reply, tc.status, tc.msg)
					}
				}
				return
			}
			for _, target := range []struct{ method, path, op string }{{"POST", "/api/forms", "create form"}, {"PUT", "/api/forms/" + itoa(existing.ID), "update form " + itoa(existing.ID)}} {
				before := e.snapshot()
				status, reply := e.do(target.method, target.path, body)
				want := tc.msg
				if strings.Contains(want, "%s") {
					want = fmt.Sprintf(want, target.op)
				}
				if status != tc.status && !(tc.status == 201 && target.method == "PUT" && status == 200) {
					t.Errorf("%s %s = %d %.200s, want %d", target.method, target.path, status, reply, tc.status)
				}
				if tc.status >= 400 {
					if got := strings.TrimSpace(string(reply)); got != `{"error":"`+want+`"}` {
						t.Errorf("%s %s = %.200s, want %q", target.method, target.path, got, want)
					}
					if e.snapshot() != before {
						t.Errorf("%s %s refused but changed the database", target.method, target.path)
					}
				}
			}
		})
	}
}

// TestValueLimit: a submitted value past maxValueChars is a 400 and stores nothing.
func TestValueLimit(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	f := e.createForm(fullForm())
	field := itoa(f.Categories[0].Fields[0].ID)
	if id := e.submit(f.ID, map[string]any{field: strings.Repeat("x", maxValueChars)}); id == 0 {
		t.Fatal("a value at the limit was refused")
	}
	before := e.snapshot()
	want := fmt.Sprintf("Response value is too long (at most %d characters)", maxValueChars)
	e.wantError("POST", "/api/forms/"+itoa(f.ID)+"/responses", map[string]any{"values": map[string]any{field: strings.Repeat("x", maxValueChars+1)}}, 400, want)
	if e.snapshot() != before {
		t.Error("a refused value changed the database")
	}
}

// TestJSStringLinear: String() of arrays nested thousands deep allocates in proportion to
// its input, not to depth × size (each level once joined its own string).
func TestJSStringLinear(t *testing.T) {
	const depth, leaf = 5000, 100_000
	raw := strings.Repeat("[", depth) + `"` + strings.Repeat("x", leaf) + `"` + strings.Repeat(",1]", depth)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	s := jsText(json.RawMessage(raw))
	runtime.ReadMemStats(&after)
	if len(s) != leaf+2*depth {
		t.Fatalf("jsText = %d characters; want %d", len(s), leaf+2*depth)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 50*uint64(len(raw)) {
		t.Errorf("String() of %d bytes nested %d deep allocated %d bytes, more than 50 times its input", len(raw), depth, alloc)
	}
}

// TestListsAcrossPages: lists longer than a page, and pages cut by the bytes of their
// values, read back whole, newest first, each item once, in the JSON list and the CSV.
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
}

// TestRepliesAndUploadsBounded: with the room for replies in memory taken, a large
// reply (a PDF, a list over 64 KiB) waits and is refused 503 with Retry-After, while a
// small one goes out; with the room for bodies taken, a large body is refused 503 and
// stores nothing, while a small one goes in.
func TestRepliesAndUploadsBounded(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.srv.replies = newGate(1<<20, smallReplyBytes, 4, 50*time.Millisecond)
	e.srv.uploads = newGate(1<<20, smallBodyBytes, 4, 50*time.Millisecond)
	f := e.createForm(fullForm())
	field := itoa(f.Categories[0].Fields[0].ID)
	responseID := e.submit(f.ID, map[string]any{field: strings.Repeat("x", 70_000)}) // a list over 64 KiB
	holdReplies, _ := e.srv.replies.acquire(context.Background(), 1<<20)
	holdUploads, _ := e.srv.uploads.acquire(context.Background(), 1<<20)
	for _, path := range []string{"/api/forms/" + itoa(f.ID) + "/responses", "/api/responses/" + itoa(responseID) + "/export/pdf"} {
		res, body := e.getRaw(path)
		if res.StatusCode != 503 || res.Header.Get("Retry-After") == "" {
			t.Errorf("GET %s with no room for replies = %d %.100s, want 503 with Retry-After", path, res.StatusCode, body)
		}
	}
	if res, _ := e.getRaw("/api/forms/" + itoa(f.ID)); res.StatusCode != 200 {
		t.Errorf("a small reply with no room for large ones = %d, want 200", res.StatusCode)
	}
	before := e.count("responses")
	status, _ := e.do("POST", "/api/forms/"+itoa(f.ID)+"/responses", map[string]any{"values": map[string]any{field: strings.Repeat("y", 80_000)}})
	if status != 503 || e.count("responses") != before {
		t.Errorf("a large body with no room for bodies = %d (responses %d → %d), want 503 and nothing stored", status, before, e.count("responses"))
	}
	if id := e.submit(f.ID, map[string]any{field: "small"}); id == 0 {
		t.Error("a small body was refused")
	}
	holdReplies()
	holdUploads()
	if res, _ := e.getRaw("/api/responses/" + itoa(responseID) + "/export/pdf"); res.StatusCode != 200 {
		t.Errorf("the PDF once the room is free = %d, want 200", res.StatusCode)
	}
}

// TestWritesQueued: with every write slot taken, a request that changes data waits in a
// queue of bounded length, each for a bounded time: one that finds the queue full (a
// submit, a setting, a deletion), and one whose wait runs out, are refused 503 with
// Retry-After and change nothing, while reads, and writes to no route, are answered; a
// slot set free lets the one waiting in.
func TestWritesQueued(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	f := e.createForm(fullForm())
	field := itoa(f.Categories[0].Fields[0].ID)
	submit := `{"values": {"` + field + `": "v"}}`
	send := func(method, path, body string) *http.Response {
		req, _ := http.NewRequest(method, e.http.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		res, err := e.http.Client().Do(req)
		if err != nil {
			t.Error(err)
			return &http.Response{}
		}
		res.Body.Close()
		return res
	}
	responses := "/api/forms/" + itoa(f.ID) + "/responses"
	e.srv.writes = newGate(1, 0, 1, 300*time.Millisecond)
	hold, _ := e.srv.writes.acquire(context.Background(), 1)
	queued := func() bool { return gateWaiting(e.srv.writes) == 1 }
	waited := make(chan *http.Response)
	go func() { waited <- send("POST", responses, submit) }()
	waitFor(t, queued)
	for _, req := range [][3]string{{"POST", responses, submit}, {"PUT", "/api/settings/k", `{"value": "v"}`}, {"DELETE", "/api/forms/" + itoa(f.ID), ""}} {
		if res := send(req[0], req[1], req[2]); res.StatusCode != 503 || res.Header.Get("Retry-After") == "" {
			t.Errorf("%s %s with the queue full = %d (Retry-After %q), want 503 with Retry-After", req[0], req[1], res.StatusCode, res.Header.Get("Retry-After"))
		}
	}
	if res := <-waited; res.StatusCode != 503 || res.Header.Get("Retry-After") == "" {
		t.Errorf("a submit whose wait ran out = %d, want 503 with Retry-After", res.StatusCode)
	}
	if res, _ := e.getRaw("/api/forms/" + itoa(f.ID)); res.StatusCode != 200 {
		t.Errorf("a read with every write slot taken = %d, want 200", res.StatusCode)
	}
	if res := send("POST", "/api/nowhere", "{}"); res.StatusCode != 404 {
		t.Errorf("a POST to no route with every write slot taken = %d, want 404", res.StatusCode)
	}
	var k map[string]any
	if e.doJSON("GET", "/api/settings/k", nil, &k); e.count("responses") != 0 || k["value"] == "v" {
		t.Errorf("after refused writes: %d responses, setting %v; want none stored", e.count("responses"), k)
	}
	hold()
	e.srv.writes = newGate(1, 0, 1, 10*time.Second) // a wait long enough to be let in below
	hold, _ = e.srv.writes.acquire(context.Background(), 1)
	go func() { waited <- send("POST", responses, submit) }()
	waitFor(t, queued)
	hold()
	if res := <-waited; res.StatusCode != 201 {
		t.Errorf("a waiting submit when the slot is set free = %d, want 201", res.StatusCode)
	}
	// Every route that changes data takes a write slot: with none free and no room to
	// wait, each is refused.
	e.srv.writes = newGate(1, 0, 0, time.Second)
	hold, _ = e.srv.writes.acquire(context.Background(), 1)
	defer hold()
	for route := range e.srv.routes() {
		if method, pattern, _ := strings.Cut(route, " "); method != "GET" {
			path := strings.NewReplacer("{id}", itoa(f.ID), "{key}", "k").Replace(pattern)
			if res := send(method, path, "{}"); res.StatusCode != 503 {
				t.Errorf("%s with no write slot free = %d, want 503", route, res.StatusCode)
			}
		}
	}
}

// TestSummaryPageLimit: a limit above maxSummaryPage reads as maxSummaryPage; total
// still counts every summary.
func TestSummaryPageLimit(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range maxSummaryPage + 20 {
		if err := e.store.SaveTrackerSummary(context.Background(), day.AddDate(0, 0, i), "text"); err != nil {
			t.Fatal(err)
		}
	}
	var page struct {
		Summaries []Summary `json:"summaries"`
		Total     int       `json:"total"`
	}
	if status := e.doJSON("GET", "/api/tracker-summaries?limit=1000", nil, &page); status != 200 || len(page.Summaries) != maxSummaryPage || page.Total != maxSummaryPage+20 {
		t.Errorf("limit=1000 = %d with %d summaries of %d, want %d of %d", status, len(page.Summaries), page.Total, maxSummaryPage, maxSummaryPage+20)
	}
}

// TestResponsePageCutByBytes: a page of responses ends at the first response that begins
// past listPageBytes of values, and the next page begins after the last one it holds.
func TestResponsePageCutByBytes(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	f := e.createForm(fullForm())
	field := itoa(f.Categories[0].Fields[0].ID)
	for range 10 {
		e.submit(f.ID, map[string]any{field: strings.Repeat("v", listPageBytes/4)})
	}
	_, fields, err := e.store.ResponseFields(context.Background(), f.ID)
	if err != nil {
		t.Fatal(err)
	}
	page, next, err := e.store.ListResponses(context.Background(), f.ID, fields, listStart())
	if err != nil || next == nil || len(page) != 5 {
		t.Fatalf("first page = %d responses (next %v, %v), want 5: four fill %d bytes, the fifth passes them", len(page), next, err, listPageBytes)
	}
	rest, next, err := e.store.ListResponses(context.Background(), f.ID, fields, *next)
	if err != nil || len(rest) != 5 || next != nil || rest[0].ID != page[4].ID-1 {
		t.Errorf("second page = %v (next %v, %v), want the other 5 from %d", rest, next, err, page[4].ID-1)
	}
}

// TestPDFTooLongReply: a response whose PDF would pass pdfMaxPages (a textarea of
// newlines at the value limit) is answered 500 with the limit named, nothing sent.
func TestPDFTooLongReply(t *testing.T) {
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
}

// TestGate: a gate admits up to its capacity, in order; a waiter past the queue's length
// or its wait is refused errBusy at once or at the deadline; a client gone while
// waiting gets its context's error; whatever gives up leaves the gate as it found it.
func TestGate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := newGate(10, 0, 2, 100*time.Millisecond)
	hold, err := g.acquire(ctx, 8)
	if err != nil {
		t.Fatal(err)
	}
	// Two wait (the queue's length), the third is refused at once.
	results := make(chan error, 2)
	for range 2 {
		go func() {
			release, err := g.acquire(ctx, 5)
			if err == nil {
				release()
			}
			results <- err
		}()
	}
	waitFor(t, func() bool { return gateWaiting(g) == 2 })
	if _, err := g.acquire(ctx, 1); err != errBusy {
		t.Errorf("a third waiter = %v, want errBusy at once", err)
	}
	if waiting := gateWaiting(g); waiting != 2 {
		t.Errorf("after a waiter refused, %d wait, want the 2 before it", waiting)
	}
	for range 2 {
		if err := <-results; err != errBusy {
			t.Errorf("a waiter past its deadline = %v, want errBusy", err)
		}
	}
	hold()
	if used := gateUsed(g); used != 0 {
		t.Errorf("after every release the gate holds %d", used)
	}
	// A release admits the first in line.
	hold, _ = g.acquire(ctx, 10)
	admitted := make(chan error, 1)
	go func() {
		release, err := g.acquire(ctx, 10)
		if err == nil {
			release()
		}
		admitted <- err
	}()
	waitFor(t, func() bool { return gateWaiting(g) == 1 })
	hold()
	if err := <-admitted; err != nil {
		t.Errorf("a waiter after a release = %v, want admitted", err)
	}
	// A client that leaves gets its context's error.
	hold, _ = g.acquire(ctx, 10)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := g.acquire(cctx, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled waiter = %v, want context.Canceled", err)
	}
	hold()
	if used, waiting := gateUsed(g), gateWaiting(g); used != 0 || waiting != 0 {
		t.Errorf("the gate holds %d with %d waiting after everyone left", used, waiting)
	}
}

// TestHeavySlotsPerCore: the server has one heavy slot per core the runtime uses, and
// reading that number leaves it as it was.
func TestHeavySlotsPerCore(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3)) // not parallel: no other test runs now
	e := newTestEnv(t)
	if slots, procs := e.srv.heavy.capacity, runtime.GOMAXPROCS(0); slots != 3 || procs != 3 {
		t.Errorf("%d heavy slots, GOMAXPROCS %d after the server was built; want 3 and 3",
			slots, procs)
	}
}

// TestGateWaiterLeavesMidQueue: a waiter whose client leaves while others wait before and
// after it gives up its place: the next release admits the one before it, the one after
// it comes next, and the gate ends holding nothing.
func TestGateWaiterLeavesMidQueue(t *testing.T) {
	t.Parallel()
	g := newGate(2, 0, 3, time.Minute)
	hold, err := g.acquire(context.Background(), 1) // one unit free, each waiter wants two
	if err != nil {
		t.Fatal(err)
	}
	admitted := make(chan string, 2)
	wait := func(name string, ctx context.Context) <-chan error {
		done := make(chan error, 1)
		go func() {
			release, err := g.acquire(ctx, 2)
			if err == nil {
				admitted <- name
				release()
			}
			done <- err
		}()
		return done
	}
	first := wait("first", context.Background())
	waitFor(t, func() bool { return gateQueued(g) })
	ctx, leave := context.WithCancel(context.Background())
	middle := wait("middle", ctx)
	waitFor(t, func() bool { return gateWaiting(g) == 2 })
	last := wait("last", context.Background())
	waitFor(t, func() bool { return gateWaiting(g) == 3 })
	leave()
	if err := <-middle; err == nil {
		t.Fatal("the waiter that left was admitted")
	}
	hold()
	for _, done := range []<-chan error{first, last} {
		if err := <-done; err != nil {
			t.Errorf("a waiter after the one that left = %v, want admitted", err)
		}
	}
	if a, b := <-admitted, <-admitted; a != "first" || b != "last" {
		t.Errorf("admitted %s then %s, want first then last", a, b)
	}
	if used, waiting := gateUsed(g), gateWaiting(g); used != 0 || waiting != 0 {
		t.Errorf("the gate holds %d with %d waiting, want nothing", used, waiting)
	}
}

// TestGateLargeWaiterLeaves: a large waiter at the head of the queue holds up the smaller
// ones behind it, which fit; when it gives up, they are admitted at once.
func TestGateLargeWaiterLeaves(t *testing.T) {
	t.Parallel()
	g := newGate(10, 0, 2, time.Minute)
	hold, err := g.acquire(context.Background(), 8)
	if err != nil {
		t.Fatal(err)
	}
	defer hold()
	ctx, leave := context.WithCancel(context.Background())
	large := make(chan error, 1)
	go func() {
		_, err := g.acquire(ctx, 10)
		large <- err
	}()
	waitFor(t, func() bool { return gateQueued(g) })
	small := make(chan error, 1)
	go func() {
		release, err := g.acquire(context.Background(), 2)
		if err == nil {
			release()
		}
		small <- err
	}()
	waitFor(t, func() bool { return gateWaiting(g) == 2 })
	select {
	case err := <-small:
		t.Fatalf("a small waiter passed the large one at the head of the queue: %v", err)
	default:
	}
	leave()
	if err := <-large; !errors.Is(err, context.Canceled) {
		t.Errorf("the large waiter that left = %v, want context.Canceled", err)
	}
	select {
	case err := <-small:
		if err != nil {
			t.Errorf("the small waiter = %v, want admitted", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("the small waiter is still waiting after the large one at the head left")
	}
}

// TestHeavyQueueBounded: with every heavy slot busy and the queue full, one more PDF is
// answered 503 with Retry-After at once.
func TestHeavyQueueBounded(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	f := e.createForm(fullForm())
	pdf := "/api/responses/" + itoa(e.submit(f.ID, map[string]any{itoa(f.Categories[0].Fields[0].ID): "x"})) + "/export/pdf"
	release := occupyHeavy(t, e.srv)
	defer release()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range heavyQueue {
		go func() {
			req := apiRequest("GET", pdf, nil).WithContext(ctx)
			e.srv.ServeHTTP(httptest.NewRecorder(), req)
		}()
	}
	waitFor(t, func() bool { return gateWaiting(e.srv.heavy) == heavyQueue })
	res, body := e.getRaw(pdf)
	if res.StatusCode != 503 || res.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "busy") {
		t.Errorf("PDF with a full queue = %d %s (Retry-After %q), want 503", res.StatusCode, body, res.Header.Get("Retry-After"))
	}
}

// TestHeavyRepliesWaitForASlot: with every heavy slot busy, the replies that may be large
// wait (a PDF export, a response list, a CSV export, a large form, the form list, a setting,
// the summaries), so that those built and waiting for room among the replies are as few as
// the slots; the moment a slot frees, the waiting one is answered. A small form does not wait.
func TestHeavyRepliesWaitForASlot(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	f := e.createForm(fullForm())
	responseID := e.submit(f.ID, map[string]any{itoa(f.Categories[0].Fields[0].ID): "x"})
	var fields []any
	for i := range 20 { // 6 bytes of JSON a character at most: a reply past smallReplyBytes
		fields = append(fields, map[string]any{"label": fmt.Sprint(i), "type": "text", "description": strings.Repeat("d", 1000)})
	}
	large := e.createForm(map[string]any{"title": "t", "categories": []any{map[string]any{"fields": fields}}})
	if err := e.srv.store.SaveTrackerSummary(context.Background(), startOfDay(e.srv.now()), "s"); err != nil {
		t.Fatal(err)
	}
	for _, req := range []struct{ method, path, body string }{
		{"GET", "/api/responses/" + itoa(responseID) + "/export/pdf", ""},
		{"GET", "/api/forms/" + itoa(f.ID) + "/responses", ""},
		{"GET", "/api/forms/" + itoa(f.ID) + "/responses.csv", ""},
		{"GET", "/api/forms/" + itoa(large.ID), ""},
		{"GET", "/api/forms", ""},
		{"PUT", "/api/settings/k", `{"value": "v"}`},
		{"GET", "/api/settings/k", ""},
		{"GET", "/api/tracker-summary/today", ""},
		{"GET", "/api/tracker-summaries", ""},
		{"GET", "/api/email-summaries", ""},
	} {
		release := occupyHeavy(t, e.srv)
		answered := make(chan int, 1)
		go func() {
			w := httptest.NewRecorder()
			e.srv.ServeHTTP(w, apiRequest(req.method, req.path, strings.NewReader(req.body)))
			answered <- w.Code
		}()
		select {
		case status := <-answered:
			t.Errorf("%s %s answered %d while every slot was busy", req.method, req.path, status)
			release()
			continue
		case <-time.After(300 * time.Millisecond): // a reply without a slot takes a few ms
		}
		release()
		select {
		case status := <-answered:
			if status != 200 {
				t.Errorf("%s %s = %d once a slot freed, want 200", req.method, req.path, status)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s %s still waits after a slot freed", req.method, req.path)
		}
	}
	release := occupyHeavy(t, e.srv)
	defer release()
	if status, raw := e.do("GET", "/api/forms/"+itoa(f.ID), nil); status != 200 {
		t.Errorf("a small form with every slot busy = %d %s, want 200 at once", status, raw)
	}
}

// TestChunkedBodyCountsAsLargest: a body of unknown length (chunked) holds the whole
// body limit of the upload budget while it is read, since it may be that long.
func TestChunkedBodyCountsAsLargest(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.http.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "POST /api/forms HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"tit\r\n")
	waitFor(t, func() bool { return gateUsed(e.srv.uploads) == maxBodyBytes })
	conn.Close()
	waitFor(t, func() bool { return gateUsed(e.srv.uploads) == 0 })
}

// TestDocumentedLimits reads each number of docs/DESIGN.md's "Limits" table (and the
// shutdown grace, the PDF's name budget, the busy timeout, the outbound timeout, the
// size of the health check's write and the list's page it states elsewhere)
// literally, and compares it with the value the service runs with; the fields limit is
// also tried at the documented number and one past it.
func TestDocumentedLimits(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("docs/DESIGN.md")
	if err != nil {
		t.Fatal(err)
	}
	design := string(raw)
	thousands := func(n int) string { // 1,000 as the table writes it
		s := strconv.Itoa(n)
		for i := len(s) - 3; i > 0; i -= 3 {
			s = s[:i] + "," + s[i:]
		}
		return s
	}
	size := func(n int) string {
		if n%(1<<20) == 0 {
			return fmt.Sprintf("%d MiB", n>>20)
		}
		return fmt.Sprintf("%d KiB", n>>10)
	}
	secs := func(d time.Duration) string { return fmt.Sprintf("%d s", int(d/time.Second)) }
	fracSecs := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " s" }
	defaults, err := loadConfig(func(string) string { return "" }) // the tests' own config is faster
	if err != nil {
		t.Fatal(err)
	}
	e := newTestEnv(t)
	hs := newHTTPServer(e.srv.cfg, nil, e.srv.log)
	var busy int
	if err := e.store.write.QueryRow("PRAGMA busy_timeout").Scan(&busy); err != nil {
		t.Fatal(err)
	}
	// The size of the write /healthz tries, as a trigger on settings sees it.
	var probe int
	_, err = e.store.write.Exec(`CREATE TABLE probes (key TEXT, size INTEGER);
		CREATE TRIGGER probe AFTER INSERT ON settings
		BEGIN INSERT INTO probes VALUES (NEW.key, length(NEW.value)); END`)
	if err == nil {
		err = e.store.ProbeWrite(context.Background())
	}
	if err == nil {
		row := e.store.write.QueryRow(`SELECT size FROM probes WHERE key = ?`, "\x00probe")
		err = row.Scan(&probe)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pattern string   // a regular expression whose groups are the documented values
		want    []string // the values of the code, as the document writes them
	}{
		{`\| request body \| ([^|]+) \|`, []string{size(maxBodyBytes)}},
		{`\| form title \| ([\d,]+) characters \|`, []string{thousands(maxTitleChars)}},
		{`\| form description \| ([\d,]+) characters \|`, []string{thousands(maxDescriptionChars)}},
		{`\| categories per form \| ([\d,]+) \|`, []string{thousands(maxCategories)}},
		{`\| fields per form, all categories \| ([\d,]+) \|`, []string{thousands(maxFields)}},
		{`\| field label, category name \| ([\d,]+) characters \|`, []string{thousands(maxLabelChars)}},
		{`\| field description \| ([\d,]+) characters \|`, []string{thousands(maxDescriptionChars)}},
		{`\| submitted value[^|]*\| ([\d,]+) characters \|`, []string{thousands(maxValueChars)}},
		{`\| summary page size[^|]*\| ([\d,]+) \|`, []string{thousands(maxSummaryPage)}},
		{`\| PDF pages \| ([\d,]+) \|`, []string{thousands(pdfMaxPages)}},
		{`names total at most ([\d,]+) letters`, []string{thousands(pdfNameBudget)}},
		{`\| open connections \| ([\d,]+) \|`, []string{thousands(maxConnections)}},
		{`\| large bodies[^|(]*\(over (\d+ KiB)[^|]*\| (\d+ MiB) \|[^|]*after waiting (\d+ s)`,
			[]string{size(smallBodyBytes), size(maxUploadBytes), secs(maxUploadWait)}},
		{`\| (?:answers|replies) in memory[^|(]*\(over (\d+ KiB)[^|]*\| (\d+ MiB) \|` +
			`[^|]*after waiting (\d+ s)`,
			[]string{size(smallReplyBytes), size(maxReplyBytes), secs(maxReplyWait)}},
		{`\| heavy [^|]*\| one per core; (\d+) waiting, each at most (\d+ s) \|`,
			[]string{strconv.Itoa(heavyQueue), secs(heavyWait)}},
		{`\| requests that change data[^|]*\| (\d+) at once; (\d+) waiting, ` +
			`each at most (\d+ s) \(half the shutdown's grace\)`,
			[]string{strconv.Itoa(writeSlots), strconv.Itoa(writeQueue), secs(writeWait)}},
		{`Shutdown: requests in flight get up to (\d+ s);[^;]*waited for up to (\d+ s)`,
			[]string{secs(e.srv.cfg.RequestGrace), secs(e.srv.cfg.JobGrace)}},
		{`\| headers, whole body, whole \w+, idle connection \| (\d+ s), (\d+ s), (\d+ s), (\d+ s) \|`,
			[]string{secs(hs.ReadHeaderTimeout), secs(hs.ReadTimeout), secs(hs.WriteTimeout),
				secs(hs.IdleTimeout)}},
		{`\((\d+ s): the single writer waits them out\)`,
			[]string{secs(time.Duration(busy) * time.Millisecond)}},
		{`Outbound calls time out \((\d+ s)\)`, []string{secs(e.srv.cfg.OutboundTimeout)}},
		{`is retried twice, after ([\d.]+ s) and then ([\d.]+ s)`,
			[]string{fracSecs(defaults.OutboundRetryDelay), fracSecs(2 * defaults.OutboundRetryDelay)}},
		{`/healthz` + "`" + ` itself tries a write \((\d+ KiB) inserted`, []string{size(probe)}},
		{`written a page at a time \((\d+) rows,\s+and a page of responses ends after (\d+ KiB)`,
			[]string{strconv.Itoa(listPageRows), size(listPageBytes)}},
	} {
		m := regexp.MustCompile(tc.pattern).FindStringSubmatch(design)
		if m == nil {
			t.Errorf("docs/DESIGN.md has no %s", tc.pattern)
			continue
		}
		if got := m[1:]; !slices.Equal(got, tc.want) {
			t.Errorf("docs/DESIGN.md: %s = %q, the code %q", tc.pattern, got, tc.want)
		}
	}
	perf, err := os.ReadFile("docs/PERFORMANCE.md")
	if err != nil {
		t.Fatal(err)
	}
	cache := regexp.MustCompile(`form cache\*\* \(store.go, (\d+ MiB)`).FindSubmatch(perf)
	if cache == nil || string(cache[1]) != size(formCacheBytes) {
		t.Errorf("docs/PERFORMANCE.md's form cache: %q, the code %s", cache, size(formCacheBytes))
	}
	if e.srv.cfg.RequestGrace != 2*writeWait {
		t.Errorf("writeWait %v is not half the shutdown's grace %v", writeWait, e.srv.cfg.RequestGrace)
	}

	// The fields limit, at the documented number and one past it.
	fieldsRow := regexp.MustCompile(`\| fields per form, all categories \| ([\d,]+) \|`)
	documented, _ := strconv.Atoi(strings.ReplaceAll(fieldsRow.FindStringSubmatch(design)[1], ",", ""))
	for _, n := range []int{documented, documented + 1} {
		fields := make([]any, n)
		for i := range fields {
			fields[i] = map[string]any{"label": "f", "type": "text"}
		}
		body := map[string]any{"title": "t", "categories": []any{map[string]any{"fields": fields}}}
		status, raw := e.do("POST", "/api/forms", body)
		if want := map[bool]int{true: 201, false: 400}[n == documented]; status != want {
			t.Errorf("a form of %d fields = %d %.100s, want %d", n, status, raw, want)
		}
	}
}
