package main

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// startRun starts the real service through run on a free port and returns its base URL
// and a channel with run's result.
func startRun(t *testing.T, ctx context.Context, env map[string]string) (string, <-chan error) {
	t.Helper()
	stdout := &syncBuffer{}
	stderr := &syncBuffer{}
	getenv := func(k string) string { return env[k] }
	done := make(chan error, 1)
	go func() { done <- run(ctx, nil, getenv, stdout, stderr) }()
	addr := regexp.MustCompile(`listening on (\S+)`)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if m := addr.FindStringSubmatch(stdout.String()); m != nil {
			base := "http://" + m[1]
			waitHealthy(t, base)
			return base, done
		}
		select {
		case err := <-done:
			t.Fatalf("run returned during start-up: %v\n%s", err, stderr)
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("run did not print its address: %s", stderr)
	return "", nil
}

func waitHealthy(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		res, err := http.Get(base + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s/healthz never answered 200", base)
}

// TestRunShutdownKeepsAcknowledged starts the real server, submits, cancels the context as
// SIGTERM would and reopens the database: every acknowledged response is there.
func TestRunShutdownKeepsAcknowledged(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "run.db")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base, done := startRun(t, ctx, map[string]string{"ADDR": "127.0.0.1:0", "DATABASE_PATH": dbPath})

	res, err := http.Post(base+"/api/forms", "application/json", strings.NewReader(
		`{"title": "T", "categories": [{"fields": [{"label": "a", "type": "text"}]}]}`))
	if err != nil || res.StatusCode != 201 {
		t.Fatalf("create form: %v %v", res, err)
	}
	res.Body.Close()

	acked := 0
	for i := range 100 {
		res, err := http.Post(base+"/api/forms/1/responses", "application/json",
			strings.NewReader(fmt.Sprintf(`{"values": {"1": "answer %d"}}`, i)))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode == 201 {
			acked++
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run = %v, want nil after cancel", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("run did not return within 15 s of the cancel")
	}

	store, err := OpenStore(context.Background(), dbPath, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	listed := 0
	err = store.EachResponse(context.Background(), 1, func(r Response) error {
		if len(r.Values) != 1 {
			t.Errorf("response %d has %d values, want 1", r.ID, len(r.Values))
		}
		listed++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if acked != 100 || listed != acked {
		t.Errorf("acknowledged %d of 100, found %d after restart", acked, listed)
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	err := run(context.Background(), nil, func(k string) string {
		return map[string]string{"TZ": "Mars/Olympus", "ADDR": "127.0.0.1:0"}[k]
	}, &syncBuffer{}, &syncBuffer{})
	if err == nil || !strings.Contains(err.Error(), "TZ") {
		t.Errorf("run with a bad TZ = %v, want a TZ error", err)
	}
	err = run(context.Background(), []string{"extra"}, func(string) string { return "" }, &syncBuffer{}, &syncBuffer{})
	if err == nil {
		t.Errorf("run with arguments = nil, want a usage error")
	}
}
