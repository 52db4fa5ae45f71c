package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// tracker.go holds every outbound call: the MantisBT walk first (recentTickets, its
// refusals, the token-login check), then the model (complete), then what both share
// (callWithRetry: bounds, retries, redaction). Their tests: TestTrackerPaging,
// TestTrackerListChangesDuringWalk, TestTrackerWindowEveryWeekday,
// TestTrackerRefusals (MantisBT 2.26 and 2.27 and later, mantis_test.go's fake),
// TestTrackerPrivateContent, TestOutboundRetries, TestOutboundAnswerTooLarge,
// TestModelErrorKeepsChain.

// MantisBT's REST API, as docs/DESIGN.md describes it: GET {endpoint}/issues, newest-updated
// first, `notes` omitted when an issue has none, times as PHP's date('c') writes them.
const (
	trackerPageSize = 50
	trackerMaxPages = 20
	// trackerRereads bounds the re-reads of page 1 after the walk, which find the tickets
	// updated while it ran (see recentTickets).
	trackerRereads = 3
	maxTextChars   = 2000 // of each ticket description and note text in a prompt
	// trackerSelect names the fields requested; MantisBT answers only these.
	trackerSelect = "id,summary,description,created_at,updated_at,reporter,view_state,notes"
	// vsPublic is MantisBT's view_state id of a public issue or note (VS_PUBLIC in
	// core/constant_inc.php); VS_PRIVATE is 50.
	vsPublic = 10
)

// ticket is one MantisBT issue as the prompt's $TRACKER_TICKETS carries it: the fields a
// summary needs, under MantisBT's names. Reporters keep their id and login name only:
// the e-mail address and real name an administrator's token sees are no business of an
// external model.
type ticket struct {
	ID          int64         `json:"id"`
	Summary     string        `json:"summary"`
	Description string        `json:"description"`
	CreatedAt   string        `json:"created_at"`
	UpdatedAt   string        `json:"updated_at"`
	Reporter    *ticketUser   `json:"reporter,omitempty"`
	Notes       *[]ticketNote `json:"notes,omitempty"` // nil when MantisBT omitted them
}

// ticketNote is one note of an issue.
type ticketNote struct {
	ID        int64       `json:"id"`
	Reporter  *ticketUser `json:"reporter,omitempty"`
	Text      string      `json:"text"`
	CreatedAt string      `json:"created_at"`
	UpdatedAt string      `json:"updated_at,omitempty"`
}

// ticketUser is a reporter: MantisBT writes id, name, real_name and (to administrators)
// email (api/soap/mc_account_api.php, mci_account_get_array_by_id); the last two are
// not decoded, so they cannot reach a prompt.
type ticketUser struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// mantisIssue is one issue as MantisBT's issue list writes it (api/soap/mc_issue_api.php,
// mci_issue_data_as_array), with the fields trackerSelect requests.
type mantisIssue struct {
	ID          int64         `json:"id"`
	Summary     string        `json:"summary"`
	Description string        `json:"description"`
	CreatedAt   string        `json:"created_at"`
	UpdatedAt   string        `json:"updated_at"`
	Reporter    *ticketUser   `json:"reporter"`
	ViewState   mantisEnum    `json:"view_state"`
	Notes       *[]mantisNote `json:"notes"`
}

// mantisNote is one note (mc_issue_api.php, mci_issue_get_notes); its attachments and
// type are not read.
type mantisNote struct {
	ID        int64       `json:"id"`
	Reporter  *ticketUser `json:"reporter"`
	Text      string      `json:"text"`
	ViewState mantisEnum  `json:"view_state"`
	CreatedAt string      `json:"created_at"`
	UpdatedAt string      `json:"updated_at"`
}

// mantisEnum is MantisBT's {id, name, label} of an enumeration value.
type mantisEnum struct {
	ID int `json:"id"`
}

// recentTickets reads the project's issues updated at or after start, newest first, with
// their notes created before start dropped and long texts cut. Private issues and notes
// are left out unless includePrivate; an issue or note counts as public only when
// MantisBT says so.
//
// MantisBT pages are LIMIT/OFFSET slices of a list sorted by last update, and a note
// added meanwhile moves its issue to the top: the page after the move repeats a ticket
// already read, and the moved one, unread, is now on page 1. So tickets are kept by id
// (the latest version wins) and page 1 is read again after the walk until it brings
// nothing new, at most trackerRereads times.
func recentTickets(ctx context.Context, client *http.Client, cfg config, start time.Time, includePrivate bool) ([]ticket, error) {
	if cfg.TrackerEndpoint == "" {
		return nil, errors.New("TRACKER_API_ENDPOINT is not configured")
	}
	// Without a token MantisBT serves its anonymous account, where it has one: a summary
	// of what a guest sees would pass for the project's. So no token, no call.
	if cfg.TrackerKey == "" {
		return nil, errors.New("TRACKER_API_KEY is not configured")
	}
	set := ticketSet{start: start, includePrivate: includePrivate, seen: map[int64]time.Time{}, kept: map[int64]ticket{}}
	pages := 0 // read in the walk
	for pages < trackerMaxPages {
		pages++
		issues, err := fetchTicketPage(ctx, client, cfg, pages)
		if err != nil {
			return nil, err
		}
		_, lastInWindow, err := set.add(issues)
		if err != nil {
			return nil, err
		}
		// The list is sorted newest-updated first: a short page is the last one, and once
		// a page ends outside the window every later page is older still.
		if len(issues) < trackerPageSize || !lastInWindow {
			break
		}
	}
	// Only a change between two reads shifts the pages: a walk of one page needs no re-read.
	for i := 0; i < trackerRereads && pages > 1; i++ {
		issues, err := fetchTicketPage(ctx, client, cfg, 1)
		if err != nil {
			return nil, err
		}
		news, _, err := set.add(issues)
		if err != nil {
			return nil, err
		}
		if !news {
			break
		}
	}
	return set.list(), nil
}

// ticketSet gathers the tickets of the window by id.
type ticketSet struct {
	start          time.Time
	includePrivate bool
	seen           map[int64]time.Time // last update of every issue of the window read, private ones too
	kept           map[int64]ticket
}

// add takes a page of issues. It reports whether the page brought an issue of the window
// not read before or updated since, and whether its last issue is in the window. An
// update time that is not RFC 3339 (MantisBT writes PHP's date('c'), core/date_api.php)
// fails the walk, as does a note's creation time: silently passed over, either would
// leave the summary short without a word.
func (s *ticketSet) add(issues []mantisIssue) (news, lastInWindow bool, err error) {
	for _, is := range issues {
		updated, err := time.Parse(time.RFC3339, is.UpdatedAt)
		if err != nil {
			return false, false, fmt.Errorf("issue %d: updated_at %q is not a date the tracker writes: %w", is.ID, cutText(is.UpdatedAt, 40), err)
		}
		lastInWindow = !updated.Before(s.start)
		if !lastInWindow {
			continue
		}
		if before, ok := s.seen[is.ID]; ok && !updated.After(before) {
			continue
		}
		news = true
		s.seen[is.ID] = updated
		if s.includePrivate || is.ViewState.ID == vsPublic {
			t, err := trimTicket(is, s.start, s.includePrivate)
			if err != nil {
				return false, false, err
			}
			s.kept[is.ID] = t
		} else {
			delete(s.kept, is.ID) // made private since it was read
		}
	}
	return news, lastInWindow, nil
}

// list is the kept tickets, newest-updated first.
func (s *ticketSet) list() []ticket {
	list := make([]ticket, 0, len(s.kept))
	for _, t := range s.kept {
		list = append(list, t)
	}
	slices.SortFunc(list, func(a, b ticket) int {
		if c := s.seen[b.ID].Compare(s.seen[a.ID]); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	return list
}

// trimTicket makes a prompt's ticket of an issue: its notes created before start and,
// unless includePrivate, its private notes dropped, long texts cut. A note's creation
// time that is not RFC 3339 is an error.
func trimTicket(is mantisIssue, start time.Time, includePrivate bool) (ticket, error) {
	t := ticket{
		ID: is.ID, Summary: is.Summary, Description: cutText(is.Description, maxTextChars),
		CreatedAt: is.CreatedAt, UpdatedAt: is.UpdatedAt, Reporter: is.Reporter,
	}
	if is.Notes != nil {
		notes := []ticketNote{}
		for _, n := range *is.Notes {
			created, err := time.Parse(time.RFC3339, n.CreatedAt)
			if err != nil {
				return ticket{}, fmt.Errorf("issue %d: note %d's created_at %q is not a date the tracker writes: %w", is.ID, n.ID, cutText(n.CreatedAt, 40), err)
			}
			if created.Before(start) || (!includePrivate && n.ViewState.ID != vsPublic) {
				continue
			}
			notes = append(notes, ticketNote{ID: n.ID, Reporter: n.Reporter, Text: cutText(n.Text, maxTextChars),
				CreatedAt: n.CreatedAt, UpdatedAt: n.UpdatedAt})
		}
		t.Notes = &notes
	}
	return t, nil
}

// fetchTicketPage reads one page of issues.
func fetchTicketPage(ctx context.Context, client *http.Client, cfg config, page int) ([]mantisIssue, error) {
	q := url.Values{
		"project_id": {cfg.TrackerProjectID},
		"page_size":  {fmt.Sprint(trackerPageSize)},
		"page":       {fmt.Sprint(page)},
		"select":     {trackerSelect},
	}
	u := strings.TrimRight(cfg.TrackerEndpoint, "/") + "/issues?" + q.Encode()
	body, header, err := callWithRetry(ctx, client, cfg, "tracker", func(ctx context.Context) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", cfg.TrackerKey)
		req.Header.Set("Accept", "application/json")
		req.Header.Set("Content-Type", "application/json")
		return req, nil
	})
	if err != nil {
		var se *statusError
		if errors.As(err, &se) {
			if meaning := trackerRefusal(se, cfg); meaning != "" {
				err = fmt.Errorf("%s: %w", meaning, err)
			}
		}
		// MantisBT's refusals have empty bodies, but a proxy or another server at the
		// endpoint may echo the header it was sent; the token never leaves the process.
		return nil, &redactedError{err: fmt.Errorf("read tracker page %d: %w", page, err), secret: cfg.TrackerKey}
	}
	if err := checkTokenLogin(header); err != nil {
		return nil, fmt.Errorf("read tracker page %d: %w", page, err)
	}
	var answer struct {
		Issues json.RawMessage `json:"issues"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return nil, fmt.Errorf("read tracker page %d: answer is not MantisBT's issue list: %w", page, err)
	}
	// With a project the token's user may not read, issues_rest.php still answers 200,
	// with the SOAP fault mc_filter_get_issues returned in place of the list.
	var fault struct {
		StatusCode  int    `json:"status_code"`
		FaultString string `json:"fault_string"`
	}
	if bytes.HasPrefix(bytes.TrimSpace(answer.Issues), []byte("{")) && json.Unmarshal(answer.Issues, &fault) == nil {
		return nil, fmt.Errorf("read tracker page %d: MantisBT refused the issue list, the token's user may not read the project (status_code %d): %s", page, fault.StatusCode, cutText(fault.FaultString, 200))
	}
	var issues []mantisIssue
	if len(answer.Issues) > 0 {
		if err := json.Unmarshal(answer.Issues, &issues); err != nil {
			return nil, fmt.Errorf("read tracker page %d: answer is not MantisBT's issue list: %w", page, err)
		}
	}
	return issues, nil
}

// checkTokenLogin checks that MantisBT served a page as the user of TRACKER_API_KEY.
// AuthMiddleware.php names the login method of every answer it lets through in
// X-Mantis-LoginMethod: "api-token" for a token it knows. A token it does not know is,
// on 2.27 and later, served as if none had been sent: the anonymous account, where the
// tracker has one, logged in by cookie (core.php's $g_login_anonymous), with the answer
// "cookie" and X-Mantis-Username the anonymous account. Any answer not logged in by the
// token is refused, or a guest's view of the project would pass for the whole.
func checkTokenLogin(header http.Header) error {
	method, user := header.Get("X-Mantis-LoginMethod"), header.Get("X-Mantis-Username")
	switch method {
	case "api-token":
		return nil
	case "":
		return errors.New("MantisBT's answer names no login method (no X-Mantis-LoginMethod): TRACKER_API_ENDPOINT may not be MantisBT's REST API (…/api/rest)")
	}
	return fmt.Errorf("MantisBT did not accept TRACKER_API_KEY and served another account, %q (X-Mantis-LoginMethod: %s): the token is unknown or revoked, and the tracker lets anyone in as that account",
		cutText(user, 100), cutText(method, 40))
}

// trackerRefusal says what a refusal of MantisBT means, by its status and reason phrase
// (over HTTP/2, which has no reason phrase, by its status alone), as 2.26 and as 2.27 and
// later write them (AuthMiddleware.php, issues_rest.php, ApiEnabledMiddleware.php,
// OfflineMiddleware.php; mantis_test.go's fakeTracker cites the lines).
func trackerRefusal(se *statusError, cfg config) string {
	const unknownToken = "MantisBT did not accept TRACKER_API_KEY: no user has this token (it is unknown, revoked or mistyped; MantisBT's tokens do not expire)"
	switch se.status {
	case http.StatusUnauthorized:
		// 2.27 and later: "Valid API token required", for a token no user has where the
		// tracker has no anonymous account. (2.26's "API token required" is for no token,
		// which is never sent.)
		return unknownToken + ", and the tracker has no anonymous access"
	case http.StatusForbidden:
		switch se.reason {
		case "API token not found": // 2.26
			return unknownToken
		case "Access denied":
			return "MantisBT knows TRACKER_API_KEY but refused its user: the account is disabled"
		case "Higher access level required for API access":
			return "MantisBT knows TRACKER_API_KEY but its user's access level is below what the REST API requires (webservice_readonly_access_level_threshold)"
		}
		return "MantisBT refused TRACKER_API_KEY: the token is unknown or revoked, or its user is disabled or may not use the API"
	case http.StatusNotFound:
		// A 404 of MantisBT's own carries X-Mantis-Version (VersionMiddleware.php).
		// issues_rest.php's reason for a project that does not exist or that the user may
		// not see is "Project '<id>' doesn't exist".
		projectMissing := strings.HasPrefix(se.reason, "Project '") && strings.HasSuffix(se.reason, "' doesn't exist")
		if projectMissing || se.reason == "" && se.header.Get("X-Mantis-Version") != "" {
			return fmt.Sprintf("MantisBT shows the token's user no project %s (TRACKER_PROJECT_ID): it does not exist, or the user has no access to it", cfg.TrackerProjectID)
		}
		return "the endpoint has no MantisBT issue list: is TRACKER_API_ENDPOINT MantisBT's REST base (…/api/rest)?"
	case http.StatusInternalServerError:
		// json_encode fails on text that is not UTF-8 (issues_rest.php's withJson).
		return "MantisBT failed to write the list: an issue's stored text may not be valid UTF-8"
	case http.StatusServiceUnavailable:
		switch se.reason {
		case "API disabled", "Mantis REST API disabled.":
			return "MantisBT's REST API is disabled ($g_webservice_rest_enabled)"
		case "Mantis Offline":
			return "MantisBT is offline: an administrator took it offline (mantis_offline.php)"
		}
		return "MantisBT, or a proxy before it, is unavailable"
	}
	return ""
}

// Outbound calls to the tracker and the model share one discipline: bounded time,
// bounded answers, retries on 429 and 5xx, and errors that name the status and the
// provider's message but never a key.

// maxAnswerBytes bounds what is read of an answer of the tracker or the model.
const maxAnswerBytes = 32 << 20

// callWithRetry sends the request newRequest builds and returns the body and header of a
// 2xx answer. A 429 or 5xx answer is retried twice with a growing pause. Every attempt is
// bounded by cfg.OutboundTimeout and by ctx, which shutdown cancels. A refusal is a
// *statusError; no error names a key.
func callWithRetry(ctx context.Context, client *http.Client, cfg config, service string, newRequest func(context.Context) (*http.Request, error)) ([]byte, http.Header, error) {
	for attempt := 0; ; attempt++ {
		ans, err := callOnce(ctx, client, cfg.OutboundTimeout, newRequest)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", service, err)
		}
		if ans.status >= 200 && ans.status < 300 {
			return ans.body, ans.header, nil
		}
		if (ans.status == http.StatusTooManyRequests || ans.status >= 500) && attempt < 2 {
			select {
			case <-time.After(retryPause(cfg.OutboundRetryDelay, attempt)):
			case <-ctx.Done():
				return nil, nil, fmt.Errorf("%s: %w", service, ctx.Err())
			}
			continue
		}
		return nil, nil, &statusError{service: service, status: ans.status, reason: ans.reason, header: ans.header, message: providerMessage(ans.body)}
	}
}

// statusError is a refusal: an answer outside 2xx after any retries.
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

// retryPause is the pause before retry attempt+1: first, then twice as long each time,
// so that a provider that is overloaded gets room.
func retryPause(first time.Duration, attempt int) time.Duration {
	return first << attempt
}

// outboundAnswer is one answer of the tracker or the model.
type outboundAnswer struct {
	status int
	reason string // the reason phrase, when it is not the status's standard text
	header http.Header
	body   []byte // at most maxAnswerBytes
}

// callOnce makes one request within timeout and returns its answer; an error status is
// not an error here, as callWithRetry decides what to retry.
func callOnce(ctx context.Context, client *http.Client, timeout time.Duration, newRequest func(context.Context) (*http.Request, error)) (outboundAnswer, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := newRequest(ctx)
	if err != nil {
		return outboundAnswer{}, err
	}
	res, err := client.Do(req)
	if err != nil {
		return outboundAnswer{}, redactURLError(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxAnswerBytes+1))
	if err != nil {
		return outboundAnswer{}, fmt.Errorf("read answer: %w", redactURLError(err))
	}
	if len(body) > maxAnswerBytes {
		// Cut, it would read as a malformed answer; refused, it says what it is.
		return outboundAnswer{}, fmt.Errorf("answer larger than %d MiB (status %d)", maxAnswerBytes>>20, res.StatusCode)
	}
	// res.Status is "404 Project '7' doesn't exist" over HTTP/1; over HTTP/2, the bare code.
	reason := strings.TrimSpace(strings.TrimPrefix(res.Status, fmt.Sprint(res.StatusCode)))
	if reason == http.StatusText(res.StatusCode) {
		reason = ""
	}
	return outboundAnswer{status: res.StatusCode, reason: cutText(reason, 200), header: res.Header, body: body}, nil
}

// redactURLError strips user information (a name and a password, either of which may be
// a token) from the URL inside a client error.
func redactURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			u.User = nil
			ue.URL = u.String()
		}
	}
	return err
}

// providerMessage picks the message out of an error answer: OpenAI-style
// {"error": {"message"}}, Gemini's list of those, MantisBT's {"message"}; else the start
// of the body.
func providerMessage(body []byte) string {
	var one struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	var list []struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	switch {
	case json.Unmarshal(body, &list) == nil && len(list) > 0 && list[0].Error.Message != "":
		return list[0].Error.Message
	case json.Unmarshal(body, &one) == nil:
		var inner struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(one.Error, &inner) == nil && inner.Message != "" {
			return inner.Message
		}
		var s string
		if json.Unmarshal(one.Error, &s) == nil && s != "" {
			return s
		}
		if one.Message != "" {
			return one.Message
		}
	}
	return cutText(strings.TrimSpace(string(body)), 200)
}

// cutText keeps the first n characters (runes) of s.
func cutText(s string, n int) string {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

// complete asks the model behind an OpenAI-compatible chat-completions API (Gemini's
// compatibility endpoint, OpenAI, Ollama, vLLM) to answer one user message, and returns
// choices[0].message.content.
func complete(ctx context.Context, client *http.Client, cfg config, prompt string) (string, error) {
	body, err := json.Marshal(map[string]any{
		"model":    cfg.GenAIModel,
		"messages": []map[string]string{{"role": "user", "content": prompt}},
	})
	if err != nil {
		return "", fmt.Errorf("model request: %w", err)
	}
	u := strings.TrimRight(cfg.GenAIBaseURL, "/") + "/chat/completions"
	answer, _, err := callWithRetry(ctx, client, cfg, "model", func(ctx context.Context) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+cfg.GenAIKey)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		return req, nil
	})
	if err != nil {
		// A provider may quote the key it refused; it never leaves the process.
		return "", &redactedError{err: err, secret: cfg.GenAIKey}
	}
	var out struct {
		Choices []struct {
			Message struct {
				Content *string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(answer, &out); err != nil {
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

func (e *redactedError) Error() string {
	if e.secret == "" {
		return e.err.Error() // ReplaceAll with an empty old text would insert everywhere
	}
	return strings.ReplaceAll(e.err.Error(), e.secret, "[redacted]")
}

func (e *redactedError) Unwrap() error { return e.err }
