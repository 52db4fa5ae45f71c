package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// testTrackerKey is a MantisBT API token: 32 URL-safe characters, as api_token_create
// (core/api_token_api.php) makes them.
const testTrackerKey = "tk-0123456789abcdefghijklmnopqrs"

// fakeTracker is MantisBT's GET /issues as MantisBT's own source writes each part of its
// answer (github.com/mantisbt/mantisbt), and it checks every request it gets. Where
// versions differ it answers as 2.26 (the source at 8e84c922, the last before the
// authentication fallback) or as 2.27 and later (master at 1b6b32d, 2.29.0-dev), the
// split that a real 2.26.4, 2.27.3 and 2.28.4 showed (issue 23).
//
//   - The order of the middleware (api/rest/index.php): OfflineMiddleware, then
//     VersionMiddleware, AuthMiddleware, ApiEnabledMiddleware, the route. So an offline
//     MantisBT answers 503 "Mantis Offline" (OfflineMiddleware.php, 318664bb) with no
//     X-Mantis header, and everything else carries X-Mantis-Version (VersionMiddleware.php:
//     mc_version(), MANTIS_VERSION).
//   - Authentication (api/rest/restcore/AuthMiddleware.php): a known token logs in as
//     its user, X-Mantis-LoginMethod "api-token" (8e84c922 L74-76, master L51-57). An
//     unknown one is 403 "API token not found" on 2.26 (8e84c922 L70-71); on 2.27 and
//     later it is treated as no token (master L71-88). No token: the anonymous account, if
//     any ($g_login_anonymous in core.php), logs in by cookie, X-Mantis-LoginMethod
//     "cookie" (8e84c922 L38-41, master L74-77), served even when the API is disabled
//     (ATTRIBUTE_FORCE_API_ENABLED); without a user row (no cookie:
//     auth_get_current_user_cookie in core/authentication_api.php), by name, "anonymous"
//     (8e84c922 L42-51; 3af60d475 L62-65), which a disabled API refuses (503). Without an
//     anonymous account: 401 "Valid API token required" with WWW-Authenticate: Bearer on
//     2.27 and later (master L82-86); 2.26's 401 (L45-46) is for no token, which the service
//     never sends, so the fake leaves it out.
//   - A user whose login fails (disabled): 403 "Access denied" (8e84c922 L80-81, master
//     L91-92); below webservice_readonly_access_level_threshold: 403 "Higher access level
//     required for API access" (8e84c922 L85-87, and in master after impersonation).
//   - The REST API disabled: 503 "API disabled" (ApiEnabledMiddleware.php, e19d0edd L36).
//   - Refusals are a status and a reason phrase with an empty body: withStatus(404,
//     "Project '7' doesn't exist") and no withJson.
//   - A project that does not exist, or (every version run) one the token's user may not
//     see: 404 "Project 'N' doesn't exist" (issues_rest.php, rest_issue_get: project_exists,
//     then access_has_project_level(VIEWER)). Where the user sees the project but may not
//     read it through the API, mc_filter_get_issues' SOAP fault is answered with 200
//     (rest_issue_get does not throwIfFault the list): {"issues": {"status_code": 403,
//     "fault_string": ...}}.
//   - The list (issues_rest.php, rest_issue_get): {"issues": [...]}, `[]` when none;
//     LIMIT/OFFSET pages of a list sorted by last update, then by submission, newest
//     first (build_order_by in core/classes/BugFilterQuery.class.php: the default
//     filter's last_updated DESC, then date_submitted DESC), with no tie-break past
//     those two; only the fields `select` names.
//   - Issues and notes (api/soap/mc_issue_api.php): view_state as {id, name, label},
//     reporters as {id, name, real_name, email} (mc_account_api.php), notes with
//     view_state, type and attachments; dates as PHP's date('c') writes them in the
//     server's zone (core/date_api.php): +00:00, never Z.
//   - A note added bumps its issue's last_updated (core/bugnote_api.php,
//     bug_update_date in core/bug_api.php), moving it to the top of the list.
type fakeTracker struct {
	t        *testing.T
	mu       sync.Mutex
	issues   []map[string]any // newest-updated first, as MantisBT sorts them
	pages    []int            // pages served, in order
	requests int              // requests answered, refused ones included
	failures []int            // statuses refused with before the real answers, one per request
	version  string           // MANTIS_VERSION; "2.28.4" when empty
	token    string           // the API token its user has; testTrackerKey when empty
	// anonymous is the tracker's anonymous account ($g_anonymous_account, with
	// $g_allow_anonymous_login ON); "" when it has none. anonymousByName: the account has
	// no user row yet, so MantisBT logs it in as "anonymous", not by cookie.
	anonymous       string
	anonymousByName bool
	disabled        bool // the token's user is disabled
	lowAccess       bool // the token's user is below the API's access threshold
	fault           bool // the user sees the project but may not read it through the API
	restOff         bool // $g_webservice_rest_enabled = OFF
	offline         bool // an administrator took MantisBT offline (mantis_offline.php)
	// afterPage, when set, runs after each page is served, with the lock held: the
	// tracker's data may change between the pages of one walk.
	afterPage func(f *fakeTracker, page int)
}

func (f *fakeTracker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests++
	if f.requests > 100 { // a walk past every bound of the service's: failed now, not at the suite's timeout
		f.t.Errorf("the tracker was asked %d times: the walk does not end", f.requests)
		f.refuse(w, 400, "Bad Request")
		return
	}
	q := r.URL.Query()
	switch {
	case r.Method != http.MethodGet || r.URL.Path != "/api/rest/issues":
		f.t.Errorf("tracker got %s %s, want GET /api/rest/issues", r.Method, r.URL.Path)
	case r.Header.Get("Accept") != "application/json" || r.Header.Get("Content-Type") != "application/json":
		f.t.Errorf("tracker headers = %v", r.Header)
	case q.Get("page_size") != "50" || q.Get("select") != "id,summary,description,created_at,updated_at,reporter,view_state,notes" || len(q) != 4:
		f.t.Errorf("tracker query = %v", q)
	}
	if f.offline {
		f.refuse(w, 503, "Mantis Offline")
		return
	}
	w.Header().Set("X-Mantis-Version", cmp.Or(f.version, "2.28.4"))
	if len(f.failures) > 0 {
		status := f.failures[0]
		f.failures = f.failures[1:]
		reason := map[int]string{403: "API token not found"}[status] // 2.26's unknown token
		f.refuse(w, status, cmp.Or(reason, http.StatusText(status)))
		return
	}
	loginMethod, user, refused := f.login(w, r.Header.Get("Authorization"))
	if refused {
		return
	}
	if f.restOff && loginMethod != "cookie" {
		f.refuse(w, 503, "API disabled")
		return
	}
	if project := q.Get("project_id"); project != "1" { // or one the token's user may not see
		f.refuse(w, 404, fmt.Sprintf("Project '%s' doesn't exist", project))
		return
	}
	w.Header().Set("X-Mantis-Username", user)
	w.Header().Set("X-Mantis-LoginMethod", loginMethod)
	w.Header().Set("Content-Type", "application/json")
	if f.fault {
		fmt.Fprint(w, `{"issues":{"status_code":403,"fault_string":"Access denied for user dev."}}`)
		return
	}
	page, err := strconv.Atoi(q.Get("page"))
	if err != nil || page < 1 {
		f.t.Errorf("tracker page = %q", q.Get("page"))
		page = 1
	}
	f.pages = append(f.pages, page)
	var visible []map[string]any
	for _, is := range f.issues {
		if v, _ := is["view_state"].(map[string]any); loginMethod == "api-token" || v["id"] == 10 {
			visible = append(visible, is)
		}
	}
	from := min((page-1)*50, len(visible))
	to := min(page*50, len(visible))
	selected := strings.Split(q.Get("select"), ",")
	list := []map[string]any{} // `[]`, never null, when none
	for _, is := range visible[from:to] {
		out := map[string]any{}
		for _, field := range selected {
			if v, ok := is[field]; ok {
				out[field] = v
			}
		}
		list = append(list, out)
	}
	json.NewEncoder(w).Encode(map[string]any{"issues": list})
	if f.afterPage != nil {
		f.afterPage(f, page)
	}
}

// login is AuthMiddleware.php's: the login method and user a request is served as, or a
// refusal already written.
func (f *fakeTracker) login(w http.ResponseWriter, token string) (method, user string, refused bool) {
	switch {
	case token == cmp.Or(f.token, testTrackerKey): // api_token_get_user finds the user, whatever the length
		method, user = "api-token", "dev"
	case strings.HasPrefix(f.version, "2.26."):
		f.refuse(w, 403, "API token not found")
		return "", "", true
	// No token, or on 2.27 and later one no user has: the anonymous account passes every
	// check below.
	case f.anonymous != "" && f.anonymousByName:
		return "anonymous", f.anonymous, false
	case f.anonymous != "":
		return "cookie", f.anonymous, false
	default:
		w.Header().Set("WWW-Authenticate", "Bearer")
		f.refuse(w, 401, "Valid API token required")
		return "", "", true
	}
	switch {
	case f.disabled:
		f.refuse(w, 403, "Access denied")
		return "", "", true
	case f.lowAccess:
		f.refuse(w, 403, "Higher access level required for API access")
		return "", "", true
	}
	return method, user, false
}

// refuse answers as PHP's Slim does withStatus(status, reason) and no body: net/http
// writes only standard reason phrases, so the status line is written on the connection.
func (f *fakeTracker) refuse(w http.ResponseWriter, status int, reason string) {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		f.t.Errorf("hijack: %v", err)
		return
	}
	defer conn.Close()
	fmt.Fprintf(buf, "HTTP/1.1 %d %s\r\n", status, reason)
	w.Header().Write(buf) // X-Mantis-Version, WWW-Authenticate: what the middleware set
	fmt.Fprint(buf, "Content-Length: 0\r\nContent-Type: text/html; charset=UTF-8\r\nConnection: close\r\n\r\n")
	buf.Flush()
}

// addNote adds a note to issue id as MantisBT does: the issue's last_updated becomes the
// note's time and the issue moves to the top of the list.
func (f *fakeTracker) addNote(id int, n map[string]any) {
	i := slices.IndexFunc(f.issues, func(is map[string]any) bool { return is["id"] == id })
	is := f.issues[i]
	notes, _ := is["notes"].([]map[string]any)
	is["notes"] = append(notes, n)
	is["updated_at"] = n["created_at"]
	f.issues = append([]map[string]any{is}, slices.Delete(f.issues, i, i+1)...)
}

// makePrivate sets issue id's view state to private as an update in MantisBT does: the
// issue's last_updated becomes at (bug_update in core/bug_api.php) and it moves to the top.
func (f *fakeTracker) makePrivate(id int, at string) {
	i := slices.IndexFunc(f.issues, func(is map[string]any) bool { return is["id"] == id })
	is := f.issues[i]
	is["view_state"], is["updated_at"] = private, at
	f.issues = append([]map[string]any{is}, slices.Delete(f.issues, i, i+1)...)
}

func (f *fakeTracker) requestedPages() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.pages)
}

// mantisDate writes t as MantisBT does: PHP's date('c') in the server's zone, here UTC,
// so +00:00.
func mantisDate(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05-07:00")
}

var (
	public  = map[string]any{"id": 10, "name": "public", "label": "public"}
	private = map[string]any{"id": 50, "name": "private", "label": "private"}
)

// issue builds a public MantisBT issue as its REST API writes one, with more fields than
// the service selects.
func issue(id int, updated string, notes ...map[string]any) map[string]any {
	m := map[string]any{
		"id": id, "summary": fmt.Sprintf("Ticket %d", id), "description": fmt.Sprintf("Description %d", id),
		"created_at": "2026-01-01T08:00:00+00:00", "updated_at": updated,
		"reporter":   map[string]any{"id": 1, "name": "admin", "real_name": "Ada Admin", "email": "ada@example.com"},
		"view_state": public,
		"status":     map[string]any{"id": 10, "name": "new", "label": "new", "color": "#fcbdbd"},
		"project":    map[string]any{"id": 1, "name": "Forms"},
	}
	if notes != nil {
		m["notes"] = notes
	}
	return m
}

// note builds a public note as MantisBT writes one.
func note(id int, created, text string) map[string]any {
	return map[string]any{"id": id, "text": text, "created_at": created, "updated_at": created,
		"reporter":   map[string]any{"id": 2, "name": "dev", "real_name": "Dev Eloper", "email": "dev@example.com"},
		"view_state": public, "type": "note", "attachments": []any{}}
}

// TestTrackerRefusals: each way MantisBT 2.26, and 2.27 and later, refuses, answers as an
// account other than the token's, or writes a date the service cannot read, fails the job
// with an error that says what it means, without the token, before anything reaches the
// model.
func TestTrackerRefusals(t *testing.T) {
	const (
		wrongKey = "zz-0123456789abcdefghijklmnopqrs"
		unknown  = "MantisBT did not accept TRACKER_API_KEY: no user has this token (it is unknown, revoked or mistyped; MantisBT's tokens do not expire)"
		asGuest  = `MantisBT did not accept TRACKER_API_KEY and served another account, "guest" (X-Mantis-LoginMethod: cookie)`
	)
	wrong := func(c *config) { c.TrackerKey = wrongKey }
	cases := []struct {
		name     string
		version  string
		change   func(*config)
		setup    func(*fakeTracker)
		want     string
		requests int // the tracker's answers, refused ones included
	}{
		{"unknown token", "2.26.4", wrong, nil,
			unknown + ": tracker answered 403 (API token not found)", 1},
		{"unknown token", "2.28.4", wrong, nil,
			unknown + ", and the tracker has no anonymous access: tracker answered 401 (Valid API token required)", 1},
		{"unknown token, anonymous access", "2.27.3", wrong, func(f *fakeTracker) { f.anonymous = "guest" },
			asGuest, 1},
		// The anonymous account without a user row yet is logged in by name, not by cookie:
		// the service must not take that login for the token's.
		{"unknown token, anonymous access by name", "2.28.4", wrong,
			func(f *fakeTracker) { f.anonymous, f.anonymousByName = "guest", true },
			`MantisBT did not accept TRACKER_API_KEY and served another account, "guest" ` +
				`(X-Mantis-LoginMethod: anonymous)`, 1},
		{"no token", "2.28.4", func(c *config) { c.TrackerKey = "" }, nil, "TRACKER_API_KEY is not configured", 0},
		{"the token's user disabled", "2.28.4", nil, func(f *fakeTracker) { f.disabled = true },
			"MantisBT knows TRACKER_API_KEY but refused its user: the account is disabled: tracker answered 403 (Access denied)", 1},
		{"the token's user below the API's access level", "2.27.3", nil, func(f *fakeTracker) { f.lowAccess = true },
			"MantisBT knows TRACKER_API_KEY but its user's access level is below what the REST API requires (webservice_readonly_access_level_threshold): tracker answered 403 (Higher access level required for API access)", 1},
		{"project missing", "2.26.4", func(c *config) { c.TrackerProjectID = "7" }, nil,
			"MantisBT shows the token's user no project 7 (TRACKER_PROJECT_ID): it does not exist, or the user has no access to it: tracker answered 404 (Project '7' doesn't exist)", 1},
		{"project the token's user sees but may not read: a 200 with a fault", "2.28.4", nil, func(f *fakeTracker) { f.fault = true },
			"MantisBT refused the issue list, the token's user may not read the project (status_code 403): Access denied for user dev.", 1},
		{"REST API disabled", "2.26.4", nil, func(f *fakeTracker) { f.restOff = true },
			"MantisBT's REST API is disabled ($g_webservice_rest_enabled): tracker answered 503 (API disabled)", 3},
		// ATTRIBUTE_FORCE_API_ENABLED: the anonymous account's cookie login is served anyway.
		{"REST API disabled, unknown token, anonymous access", "2.27.3", wrong,
			func(f *fakeTracker) { f.restOff, f.anonymous = true, "guest" }, asGuest, 1},
		{"offline", "2.28.4", nil, func(f *fakeTracker) { f.offline = true },
			"MantisBT is offline: an administrator took it offline (mantis_offline.php): tracker answered 503 (Mantis Offline)", 3},
		{"a stored text not UTF-8: 500 with no body", "2.28.4", nil, func(f *fakeTracker) { f.failures = []int{500, 500, 500} },
			"MantisBT failed to write the list: an issue's stored text may not be valid UTF-8: tracker answered 500", 3},
		// A date not as MantisBT writes it fails the job rather than ending the walk or
		// dropping the note unnoticed; a long one is quoted by its first 40 characters.
		{"an issue's updated_at not a date", "2.28.4", nil,
			func(f *fakeTracker) { f.issues[0]["updated_at"] = "25/11/2026 10:00" },
			`issue 1: updated_at "25/11/2026 10:00" is not a date the tracker writes`, 1},
		{"a note's created_at not a date", "2.28.4", nil, func(f *fakeTracker) {
			f.issues[0]["notes"] = []map[string]any{note(7, "25/11/2026 09:00", "a note")}
		}, `issue 1: note 7's created_at "25/11/2026 09:00" is not`, 1},
		{"a long updated_at", "2.28.4", nil, func(f *fakeTracker) {
			f.issues[0]["updated_at"] = strings.Repeat("1", 40) + strings.Repeat("9", 60)
		}, `issue 1: updated_at "` + strings.Repeat("1", 40) + `" is not a date`, 1},
	}
	for _, tc := range cases {
		t.Run(tc.version+" "+tc.name, func(t *testing.T) {
			e := newSummaryEnv(t, testNow, tc.change)
			e.tracker.version = tc.version
			if tc.setup != nil {
				tc.setup(e.tracker)
			}
			err := e.srv.generateTrackerSummary(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("generate = %v,\nwant %q", err, tc.want)
			}
			if strings.Contains(err.Error(), testTrackerKey) || strings.Contains(err.Error(), wrongKey) || len(e.model.calls()) != 0 || e.count("tracker_summaries") != 0 {
				t.Errorf("error %v; model calls %d; want no token, no call, nothing stored", err, len(e.model.calls()))
			}
			if e.tracker.requests != tc.requests {
				t.Errorf("the tracker answered %d requests, want %d", e.tracker.requests, tc.requests)
			}
		})
	}
}

// TestTrackerRefusalOverHTTP2: over HTTP/2 no reason phrase arrives, and a refusal is read
// by its status and MantisBT's own header alone; a 404 without X-Mantis-Version is another
// server's, an endpoint that is not MantisBT's REST base.
func TestTrackerRefusalOverHTTP2(t *testing.T) {
	t.Parallel()
	cfg := config{TrackerProjectID: "6"}
	mantis := http.Header{"X-Mantis-Version": {"2.28.4"}}
	const noList = "the endpoint has no MantisBT issue list: " +
		"is TRACKER_API_ENDPOINT MantisBT's REST base (…/api/rest)?"
	for _, tc := range []struct {
		status int
		reason string
		header http.Header
		want   string
	}{
		{404, "", mantis, "MantisBT shows the token's user no project 6 (TRACKER_PROJECT_ID): " +
			"it does not exist, or the user has no access to it"},
		{404, "", http.Header{}, noList},
		// MantisBT's header with a reason not issues_rest.php's: another route, not the list.
		{404, "Route not found", mantis, noList},
		// Half of issues_rest.php's reason is another server's.
		{404, "Project 'x' moved", mantis, noList},
		{404, "File 'issues' doesn't exist", mantis, noList},
		{401, "", mantis, "MantisBT did not accept TRACKER_API_KEY: no user has this token (it is unknown, " +
			"revoked or mistyped; MantisBT's tokens do not expire), and the tracker has no anonymous access"},
		{403, "", mantis, "MantisBT refused TRACKER_API_KEY: the token is unknown or revoked, or its user is disabled or may not use the API"},
		{503, "", http.Header{}, "MantisBT, or a proxy before it, is unavailable"},
		// The reason of ApiEnabledMiddleware.php's first versions.
		{503, "Mantis REST API disabled.", mantis, "MantisBT's REST API is disabled ($g_webservice_rest_enabled)"},
		{418, "", mantis, ""}, // no meaning: the status speaks for itself
	} {
		if got := trackerRefusal(&statusError{status: tc.status, reason: tc.reason, header: tc.header}, cfg); got != tc.want {
			t.Errorf("%d %q %v: %q, want %q", tc.status, tc.reason, tc.header, got, tc.want)
		}
	}
}
