package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// MantisBT's REST API, as DESIGN.md describes it: GET {endpoint}/issues, newest-updated
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
		return nil, fmt.Errorf("read tracker page %d: %w", page, err)
	}
	var answer struct {
		Issues []ticket `json:"issues"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return nil, fmt.Errorf("read tracker page %d: answer is not MantisBT's issue list: %w", page, err)
	}
	return answer.Issues, nil
}

// windowStart is local midnight two days before now, four when now is a Monday, so that
// a Monday's summary covers the weekend. time.Date normalises across month ends and
// daylight-saving changes.
func windowStart(now time.Time) time.Time {
	days := 2
	if now.Weekday() == time.Monday {
		days = 4
	}
	y, m, d := now.Date()
	return time.Date(y, m, d-days, 0, 0, 0, 0, now.Location())
}

// startOfDay is local midnight of now's day: the summaryDate of its summaries.
func startOfDay(now time.Time) time.Time {
	y, m, d := now.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, now.Location())
}
