package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// MantisBT's REST API, as docs/DESIGN.md describes it: GET {endpoint}/issues, newest-updated
// first, `notes` omitted when an issue has none, times with the server's own offset.
const (
	trackerPageSize = 50
	trackerMaxPages = 20
	maxTextChars    = 2000 // of each ticket description and note text in a prompt
)

// ticket is one MantisBT issue with the fields the service requests. It is also what
// the prompt's $TRACKER_TICKETS carries, so its JSON names are MantisBT's.
type ticket struct {
	ID          int64           `json:"id"`
	Summary     string          `json:"summary"`
	Description string          `json:"description"`
	CreatedAt   string          `json:"created_at"`
	UpdatedAt   string          `json:"updated_at"`
	Reporter    json.RawMessage `json:"reporter,omitempty"`
	Notes       *[]ticketNote   `json:"notes,omitempty"` // nil when MantisBT omitted them
}

// ticketNote is one note of an issue.
type ticketNote struct {
	ID        int64           `json:"id"`
	Reporter  json.RawMessage `json:"reporter,omitempty"`
	Text      string          `json:"text"`
	CreatedAt string          `json:"created_at"`
	UpdatedAt string          `json:"updated_at,omitempty"`
}

// recentTickets reads the project's issues updated at or after start, newest first, with
// their notes created before start dropped and long texts cut.
func recentTickets(ctx context.Context, client *http.Client, cfg config, start time.Time) ([]ticket, error) {
	if cfg.TrackerEndpoint == "" {
		return nil, errors.New("TRACKER_API_ENDPOINT is not configured")
	}
	var kept []ticket
	for page := 1; page <= trackerMaxPages; page++ {
		issues, err := fetchTicketPage(ctx, client, cfg, page)
		if err != nil {
			return nil, err
		}
		lastInWindow := false
		for _, t := range issues {
			updated, err := time.Parse(time.RFC3339, t.UpdatedAt)
			lastInWindow = err == nil && !updated.Before(start)
			if lastInWindow {
				kept = append(kept, trimTicket(t, start))
			}
		}
		// The list is sorted newest-updated first: a short page is the last one, and once
		// a page ends outside the window every later page is older still.
		if len(issues) < trackerPageSize || !lastInWindow {
			break
		}
	}
	return kept, nil
}

// trimTicket drops the notes created before start and cuts long texts.
func trimTicket(t ticket, start time.Time) ticket {
	t.Description = cutText(t.Description, maxTextChars)
	if t.Notes != nil {
		notes := []ticketNote{}
		for _, n := range *t.Notes {
			created, err := time.Parse(time.RFC3339, n.CreatedAt)
			if err != nil || created.Before(start) {
				continue
			}
			n.Text = cutText(n.Text, maxTextChars)
			notes = append(notes, n)
		}
		t.Notes = &notes
	}
	return t
}

// fetchTicketPage reads one page of issues.
func fetchTicketPage(ctx context.Context, client *http.Client, cfg config, page int) ([]ticket, error) {
	q := url.Values{
		"project_id": {cfg.TrackerProjectID},
		"page_size":  {fmt.Sprint(trackerPageSize)},
		"page":       {fmt.Sprint(page)},
		"select":     {"id,summary,description,created_at,updated_at,reporter,notes"},
	}
	u := strings.TrimRight(cfg.TrackerEndpoint, "/") + "/issues?" + q.Encode()
	body, err := callWithRetry(ctx, client, cfg, "tracker", func(ctx context.Context) (*http.Request, error) {
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
		// MantisBT may quote the token it refused; it never leaves the process.
		return nil, &redactedError{err: fmt.Errorf("read tracker page %d: %w", page, err), secret: cfg.TrackerKey}
	}
	var answer struct {
		Issues []ticket `json:"issues"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return nil, fmt.Errorf("read tracker page %d: answer is not MantisBT's issue list: %w", page, err)
	}
	return answer.Issues, nil
}

// Outbound calls to the tracker and the model share one discipline: bounded time,
// bounded answers, retries on 429 and 5xx, and errors that name the status and the
// provider's message but never a key.

// maxAnswerBytes bounds what is read of an answer of the tracker or the model.
const maxAnswerBytes = 32 << 20

// callWithRetry sends the request newRequest builds and returns the body of a 2xx
// answer. A 429 or 5xx answer is retried twice with a growing pause. Every attempt is
// bounded by cfg.OutboundTimeout and by ctx, which shutdown cancels. Errors name the
// service and the status with the start of the answer, never a key.
func callWithRetry(ctx context.Context, client *http.Client, cfg config, service string, newRequest func(context.Context) (*http.Request, error)) ([]byte, error) {
	for attempt := 0; ; attempt++ {
		body, status, err := callOnce(ctx, client, cfg.OutboundTimeout, newRequest)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", service, err)
		}
		if status >= 200 && status < 300 {
			return body, nil
		}
		if (status == http.StatusTooManyRequests || status >= 500) && attempt < 2 {
			select {
			case <-time.After(retryPause(cfg.OutboundRetryDelay, attempt)):
			case <-ctx.Done():
				return nil, fmt.Errorf("%s: %w", service, ctx.Err())
			}
			continue
		}
		return nil, fmt.Errorf("%s answered %d: %s", service, status, providerMessage(body))
	}
}

// retryPause is the pause before retry attempt+1: first, then twice as long each time,
// so that a provider that is overloaded gets room.
func retryPause(first time.Duration, attempt int) time.Duration {
	return first << attempt
}

// callOnce makes one request within timeout and returns the answer's body (at most
// maxAnswerBytes), its status and a transport error; an error status is not an error here,
// as callWithRetry decides what to retry.
func callOnce(ctx context.Context, client *http.Client, timeout time.Duration, newRequest func(context.Context) (*http.Request, error)) ([]byte, int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := newRequest(ctx)
	if err != nil {
		return nil, 0, err
	}
	res, err := client.Do(req)
	if err != nil {
		return nil, 0, redactURLError(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxAnswerBytes))
	if err != nil {
		return nil, 0, fmt.Errorf("read answer: %w", redactURLError(err))
	}
	return body, res.StatusCode, nil
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
	answer, err := callWithRetry(ctx, client, cfg, "model", func(ctx context.Context) (*http.Request, error) {
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
