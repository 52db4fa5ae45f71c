package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MantisBT's REST API, as docs/DESIGN.md describes it: GET {endpoint}/issues, newest-updated
// first, `notes` omitted when an issue has none, times as PHP's date('c') writes them.
const (
	trackerPageSize = 50
	trackerMaxPages = 20
	trackerRereads  = 3    // of page 1 after the walk (see recentTickets)
	maxTextChars    = 2000 // of each ticket description and note text in a prompt
	// trackerSelect names the fields requested; MantisBT answers only these.
	trackerSelect = "id,summary,description,created_at,updated_at,reporter,view_state,notes"
	vsPublic      = 10 // view_state of a public issue or note (VS_PUBLIC, constant_inc.php)
)

// ticket is one MantisBT issue as the prompt's $TRACKER_TICKETS carries it, under MantisBT's
// names. The view state ({id, name, label}, mc_issue_api.php) decides whether an issue or a
// note is kept; then cleared, omitzero leaves it out of the prompt.
type ticket struct {
	ID          int64            `json:"id"`
	Summary     string           `json:"summary"`
	Description string           `json:"description"`
	CreatedAt   string           `json:"created_at"`
	UpdatedAt   string           `json:"updated_at"`
	Reporter    *ticketUser      `json:"reporter,omitempty"`
	Notes       *[]ticketNote    `json:"notes,omitempty"` // nil when MantisBT omitted them
	ViewState   struct{ ID int } `json:"view_state,omitzero"`
}

type ticketNote struct {
	ID        int64            `json:"id"`
	Reporter  *ticketUser      `json:"reporter,omitempty"`
	Text      string           `json:"text"`
	CreatedAt string           `json:"created_at"`
	UpdatedAt string           `json:"updated_at,omitempty"`
	ViewState struct{ ID int } `json:"view_state,omitzero"`
}

// ticketUser is a reporter, less the real_name and email an administrator's token sees
// (mc_account_api.php): they are no business of an external model.
type ticketUser struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// recentTickets reads the project's issues updated at or after start, newest first, their
// notes created before start dropped, long texts cut, and, unless TRACKER_INCLUDE_PRIVATE
// (every API client reads the summary), all that MantisBT does not say is public left out.
// Its pages are LIMIT/OFFSET slices of a list sorted by last update: a note added meanwhile
// moves its issue to the top, unread, and repeats one on the next page. So tickets are kept
// by id, the latest version winning, and page 1 is read again until it brings nothing new.
func recentTickets(ctx context.Context, client *http.Client, cfg config,
	start time.Time) ([]ticket, error) {
	if cfg.TrackerEndpoint == "" {
		return nil, rejected("TRACKER_API_ENDPOINT is not configured")
	}
	// Without a token MantisBT serves its anonymous account, where it has one: a summary
	// of what a guest sees would pass for the project's. So no token, no call.
	if cfg.TrackerKey == "" {
		return nil, rejected("TRACKER_API_KEY is not configured")
	}
	set := ticketSet{start: start, seen: map[int64]time.Time{}, kept: map[int64]ticket{}}
	var err error
	pages, more := 0, true // pages read in the walk
	for more && pages < trackerMaxPages {
		pages++
		if _, more, err = set.read(ctx, client, cfg, pages); err != nil {
			return nil, err
		}
	}
	// Only a change between two reads shifts the pages: a walk of one page needs no re-read.
	for news, i := pages > 1, 0; news && i < trackerRereads; i++ {
		if news, _, err = set.read(ctx, client, cfg, 1); err != nil {
			return nil, err
		}
	}
	return slices.SortedFunc(maps.Values(set.kept), func(a, b ticket) int { // newest-updated first
		return cmp.Or(set.seen[b.ID].Compare(set.seen[a.ID]), cmp.Compare(b.ID, a.ID))
	}), nil
}

// ticketSet gathers the tickets of the window by id.
type ticketSet struct {
	start time.Time
	seen  map[int64]time.Time // last update of every issue of the window read, private ones too
	kept  map[int64]ticket
}

// read takes a page of issues and reports whether it brought an issue of the window not read
// before or updated since, and whether the next page may hold more of the window. An update
// or a note's creation time that is not RFC 3339 (PHP's date('c')) fails the walk: passed
// over, either would leave the summary short without a word.
func (s *ticketSet) read(ctx context.Context, client *http.Client, cfg config, page int) (news, more bool, err error) {
	issues, err := fetchTicketPage(ctx, client, cfg, page)
	if err != nil {
		return false, false, err
	}
	inWindow := false // the issue read last is
	for _, is := range issues {
		updated, err := time.Parse(time.RFC3339, is.UpdatedAt)
		if err != nil {
			return false, false, fmt.Errorf("issue %d: updated_at %q is not a date the tracker writes: %w", is.ID, cutText(is.UpdatedAt, 40), err)
		}
		inWindow = !updated.Before(s.start)
		if before, ok := s.seen[is.ID]; !inWindow || ok && !updated.After(before) {
			continue
		}
		news = true
		s.seen[is.ID] = updated
		if !cfg.TrackerIncludePrivate && is.ViewState.ID != vsPublic {
			delete(s.kept, is.ID) // made private since it was read
			continue
		}
		is.Description = cutText(is.Description, maxTextChars)
		is.ViewState.ID = 0
		if is.Notes != nil {
			notes := []ticketNote{}
			for _, n := range *is.Notes {
				created, err := time.Parse(time.RFC3339, n.CreatedAt)
				if err != nil {
					return false, false, fmt.Errorf("issue %d: note %d's created_at %q is not a date the tracker writes: %w", is.ID, n.ID, cutText(n.CreatedAt, 40), err)
				}
				if !created.Before(s.start) && (cfg.TrackerIncludePrivate || n.ViewState.ID == vsPublic) {
					n.Text = cutText(n.Text, maxTextChars)
					n.ViewState.ID = 0
					notes = append(notes, n)
				}
			}
			is.Notes = &notes
		}
		s.kept[is.ID] = is
	}
	return news, len(issues) >= trackerPageSize && inWindow, nil
}

// fetchTicketPage reads one page of issues as TRACKER_API_KEY's user sees it. Its errors
// name the page and never the token: MantisBT's refusals have empty bodies, but a proxy or
// another server at the endpoint may echo the header it was sent.
func fetchTicketPage(ctx context.Context, client *http.Client, cfg config, page int) (_ []ticket, err error) {
	defer func() {
		if err != nil {
			err = &redactedError{err: fmt.Errorf("read tracker page %d: %w", page, err), secret: cfg.TrackerKey}
		}
	}()
	q := url.Values{"project_id": {cfg.TrackerProjectID}, "page_size": {strconv.Itoa(trackerPageSize)},
		"page": {strconv.Itoa(page)}, "select": {trackerSelect}}
	u := strings.TrimRight(cfg.TrackerEndpoint, "/") + "/issues?" + q.Encode()
	body, header, err := callWithRetry(ctx, client, cfg, "tracker", http.MethodGet, u, cfg.TrackerKey, nil)
	if meaning := trackerRefusal(err, cfg); meaning != "" {
		return nil, fmt.Errorf("%s: %w", meaning, err)
	}
	if err != nil {
		return nil, err
	}
	// AuthMiddleware.php's X-Mantis-LoginMethod is "api-token" for a token it knows. From 2.27
	// one it does not know is served as the anonymous account, where the tracker has one
	// ("cookie" or "anonymous"), whose view of the project would pass for the whole.
	switch method := header.Get("X-Mantis-LoginMethod"); method {
	case "api-token":
	case "":
		return nil, errors.New("MantisBT's answer names no login method (no X-Mantis-LoginMethod): TRACKER_API_ENDPOINT may not be MantisBT's REST API (…/api/rest)")
	default:
		return nil, fmt.Errorf("MantisBT did not accept TRACKER_API_KEY and served another account, %q (X-Mantis-LoginMethod: %s): the token is unknown or revoked, and the tracker lets anyone in as that account",
			cutText(header.Get("X-Mantis-Username"), 100), cutText(method, 40))
	}
	var list struct{ Issues []ticket }
	if err := json.Unmarshal(body, &list); err != nil {
		// With a project the token's user may not read, issues_rest.php still answers 200,
		// with the SOAP fault of mc_filter_get_issues in place of the list.
		var fault struct {
			Issues struct {
				StatusCode  int    `json:"status_code"`
				FaultString string `json:"fault_string"`
			}
		}
		if json.Unmarshal(body, &fault) == nil {
			return nil, fmt.Errorf("MantisBT refused the issue list, the token's user may not read the project (status_code %d): %s",
				fault.Issues.StatusCode, cutText(redact(fault.Issues.FaultString, cfg.TrackerKey), 200))
		}
		return nil, fmt.Errorf("answer is not MantisBT's issue list: %w", err)
	}
	return list.Issues, nil
}

const (
	noUserHasToken = "MantisBT did not accept TRACKER_API_KEY: no user has this token (it is unknown, revoked or mistyped; MantisBT's tokens do not expire)"
	restDisabled   = "MantisBT's REST API is disabled ($g_webservice_rest_enabled)"
)

// trackerRefusals say what MantisBT's refusals mean, by status and reason phrase ("" for any
// other, or none: HTTP/2 has none), as 2.26 and 2.27 on write them (mantis_test.go's
// fakeTracker cites the PHP). The first that matches is meant.
var trackerRefusals = []struct {
	status          int
	reason, meaning string
}{
	// "Valid API token required", 2.27 and later: a token no user has where the tracker
	// has no anonymous account. (2.26's "API token required" is for no token, never sent.)
	{401, "", noUserHasToken + ", and the tracker has no anonymous access"},
	{403, "API token not found", noUserHasToken}, // 2.26
	{403, "Access denied", "MantisBT knows TRACKER_API_KEY but refused its user: the account is disabled"},
	{403, "Higher access level required for API access", "MantisBT knows TRACKER_API_KEY but its user's access level is below what the REST API requires (webservice_readonly_access_level_threshold)"},
	{403, "", "MantisBT refused TRACKER_API_KEY: the token is unknown or revoked, or its user is disabled or may not use the API"},
	// json_encode fails on text that is not UTF-8 (issues_rest.php's withJson).
	{500, "", "MantisBT failed to write the list: an issue's stored text may not be valid UTF-8"},
	{503, "API disabled", restDisabled},
	{503, "Mantis REST API disabled.", restDisabled}, // ApiEnabledMiddleware.php's first versions
	{503, "Mantis Offline", "MantisBT is offline: an administrator took it offline (mantis_offline.php)"},
	{503, "", "MantisBT, or a proxy before it, is unavailable"},
}

// trackerRefusal says what err means when it is a refusal of MantisBT: a 404 by its
// reason or, without one, by MantisBT's own header; any other status by trackerRefusals.
func trackerRefusal(err error, cfg config) string {
	se, ok := errors.AsType[*statusError](err)
	if !ok {
		return ""
	}
	if se.status == http.StatusNotFound {
		// issues_rest.php's reason for a project the user may not see, or a 404 of
		// MantisBT's own (it carries X-Mantis-Version, VersionMiddleware.php).
		projectMissing := strings.HasPrefix(se.reason, "Project '") && strings.HasSuffix(se.reason, "' doesn't exist")
		if projectMissing || se.reason == "" && se.header.Get("X-Mantis-Version") != "" {
			return fmt.Sprintf("MantisBT shows the token's user no project %s (TRACKER_PROJECT_ID): it does not exist, or the user has no access to it", cfg.TrackerProjectID)
		}
		return "the endpoint has no MantisBT issue list: is TRACKER_API_ENDPOINT MantisBT's REST base (…/api/rest)?"
	}
	for _, r := range trackerRefusals {
		if r.status == se.status && (r.reason == se.reason || r.reason == "") {
			return r.meaning
		}
	}
	return ""
}

const maxAnswerBytes = 32 << 20 // of a reply of the tracker or the model

// callWithRetry sends a JSON request with body (nil: none) and the Authorization header
// auth, and returns the body and header of a 2xx reply; a 429 or 5xx is retried twice. Every
// attempt is bounded by cfg.OutboundTimeout and by ctx. A refusal is a *statusError.
func callWithRetry(ctx context.Context, client *http.Client, cfg config, service, method, rawURL, auth string, body []byte) ([]byte, http.Header, error) {
	for attempt := 0; ; attempt++ {
		res, reply, err := callOnce(ctx, client, cfg.OutboundTimeout, method, rawURL, auth, body)
		switch {
		case err != nil:
			return nil, nil, fmt.Errorf("%s: %w", service, err)
		case res.StatusCode >= 200 && res.StatusCode < 300:
			return reply, res.Header, nil // the data as sent: a key is hidden in errors only
		case (res.StatusCode == http.StatusTooManyRequests || res.StatusCode >= 500) && attempt < 2:
			select {
			case <-time.After(cfg.OutboundRetryDelay << attempt): // doubled: room for an overloaded provider
				continue
			case <-ctx.Done():
				return nil, nil, fmt.Errorf("%s: %w", service, ctx.Err())
			}
		}
		// A server may echo the key it was sent: it is hidden before the message is cut from
		// the reply, as a key cut in two would no longer be found. res.Status is "404 Project
		// '7' doesn't exist" over HTTP/1; over HTTP/2, the bare code.
		secret := strings.TrimPrefix(auth, "Bearer ")
		reason := strings.TrimSpace(strings.TrimPrefix(res.Status, strconv.Itoa(res.StatusCode)))
		if reason == http.StatusText(res.StatusCode) {
			reason = ""
		}
		return nil, nil, &statusError{service: service, status: res.StatusCode,
			reason: cutText(redact(reason, secret), 200), header: res.Header,
			message: providerMessage([]byte(redact(string(reply), secret)))}
	}
}

// statusError is a refusal: a status outside 2xx after any retries.
type statusError struct {
	service string
	status  int
	reason  string // the reason phrase, when it is not the status's standard text
	header  http.Header
	message string // picked out of the body; MantisBT's refusals have none
}

func (e *statusError) Error() string {
	msg := fmt.Sprintf("%s answered %d", e.service, e.status)
	if e.reason != "" {
		msg += " (" + e.reason + ")"
	}
	if e.message != "" {
		msg += ": " + e.message
	}
	return msg
}

// callOnce makes one request within timeout and returns its reply, body closed, and body;
// an error status is for callWithRetry to judge.
func callOnce(ctx context.Context, client *http.Client, timeout time.Duration, method, rawURL, auth string, body []byte) (*http.Response, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, rawURL, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header = http.Header{"Authorization": {auth}, "Accept": {"application/json"}, "Content-Type": {"application/json"}}
	res, err := client.Do(req)
	if err != nil {
		return nil, nil, redactURLError(err)
	}
	defer res.Body.Close()
	reply, err := io.ReadAll(io.LimitReader(res.Body, maxAnswerBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("read answer: %w", redactURLError(err))
	}
	if len(reply) > maxAnswerBytes {
		// Cut, it would read as malformed; refused, it says what it is.
		return nil, nil, fmt.Errorf("answer larger than %d MiB (status %d)", maxAnswerBytes>>20, res.StatusCode)
	}
	return res, reply, nil
}

// redact replaces secret in s, whole. It is for what goes into an error or a log line,
// never for data: a key of "t" would rewrite every "t" of a reply.
func redact(s, secret string) string {
	if secret == "" { // ReplaceAll with an empty old text would insert everywhere
		return s
	}
	return strings.ReplaceAll(s, secret, "[redacted]")
}

// redactURLError strips user information (a name and a password, either of which may be
// a token) from the URL inside a client error.
func redactURLError(err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		if u, perr := url.Parse(ue.URL); perr == nil {
			u.User = nil
			ue.URL = u.String()
		}
	}
	return err
}

// providerMessage picks the message out of an error body: OpenAI's {"error":
// {"message"}}, Gemini's list of those, Ollama's {"error": "…"}, MantisBT's {"message"};
// else the start of the body. Either is cut to 200 characters, for one line in the log.
func providerMessage(body []byte) string {
	var v any
	json.Unmarshal(body, &v) // not JSON: v stays nil
	if list, ok := v.([]any); ok && len(list) > 0 {
		v = list[0]
	}
	obj, _ := v.(map[string]any)
	inner, _ := obj["error"].(map[string]any)
	for _, m := range []any{inner["message"], obj["error"], obj["message"]} {
		if s, ok := m.(string); ok && s != "" {
			return cutText(s, 200)
		}
	}
	return cutText(strings.TrimSpace(string(body)), 200)
}

// cutText keeps the first n characters (runes) of s.
func cutText(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// complete asks an OpenAI-compatible chat-completions API (Gemini's compatibility endpoint,
// OpenAI, Ollama, vLLM) for choices[0].message.content in reply to one user message.
func complete(ctx context.Context, client *http.Client, cfg config, prompt string) (string, error) {
	body, _ := json.Marshal(map[string]any{ // strings always encode
		"model":    cfg.GenAIModel,
		"messages": []map[string]string{{"role": "user", "content": prompt}},
	})
	u := strings.TrimRight(cfg.GenAIBaseURL, "/") + "/chat/completions"
	reply, _, err := callWithRetry(ctx, client, cfg, "model", http.MethodPost, u, "Bearer "+cfg.GenAIKey, body)
	if err != nil {
		// A provider may quote the key it refused; it never leaves the process.
		return "", &redactedError{err: err, secret: cfg.GenAIKey}
	}
	var out struct {
		Choices []struct{ Message struct{ Content *string } }
	}
	if err := json.Unmarshal(reply, &out); err != nil {
		return "", fmt.Errorf("model answer is not a chat completion: %w", err)
	}
	if len(out.Choices) == 0 || out.Choices[0].Message.Content == nil {
		return "", errors.New("model answer has no choices[0].message.content")
	}
	return *out.Choices[0].Message.Content, nil
}

// redactedError hides a secret in an error's message but keeps the error in the chain,
// so that errors.Is(err, context.Canceled) still tells a shutdown from a failure.
type redactedError struct {
	err    error
	secret string
}

func (e *redactedError) Error() string { return redact(e.err.Error(), e.secret) }

func (e *redactedError) Unwrap() error { return e.err }
