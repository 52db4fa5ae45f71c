package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// complete asks the model behind an OpenAI-compatible chat-completions API (Gemini's
// compatibility endpoint, OpenAI, Ollama, vLLM) to answer one user message, and returns
// choices[0].message.content.
func complete(ctx context.Context, client *http.Client, cfg config, prompt string) (string, error) {
	if cfg.GenAIKey == "" {
		return "", errors.New("GENAI_API_KEY is not configured")
	}
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
		return "", errors.New(strings.ReplaceAll(err.Error(), cfg.GenAIKey, "[redacted]"))
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
