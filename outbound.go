package main

import (
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
	delay := cfg.OutboundRetryDelay
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
			case <-time.After(delay):
			case <-ctx.Done():
				return nil, fmt.Errorf("%s: %w", service, ctx.Err())
			}
			delay *= 2
			continue
		}
		return nil, fmt.Errorf("%s answered %d: %s", service, status, providerMessage(body))
	}
}

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

// redactURLError strips user information from the URL inside a client error.
func redactURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			ue.URL = u.Redacted()
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
