// Command formsvc is a JSON HTTP service for forms, their responses (with a PDF export),
// daily generated summaries of issue-tracker activity and e-mail, and string settings.
// SPEC.md is its contract and DESIGN.md its decisions; README.md says how to run it.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// config is the service's configuration, read from the environment (DESIGN.md's table).
type config struct {
	Addr               string
	DatabasePath       string
	APIToken           string
	TrackerEndpoint    string
	TrackerKey         string
	TrackerProjectID   string
	GenAIKey           string
	GenAIBaseURL       string
	GenAIModel         string
	TrackerPromptFile  string
	EmailPromptFile    string
	Maildir            string
	SummarySchedule    string
	HeaderTimeout      time.Duration // how long a client may take to send its headers
	RequestGrace       time.Duration // how long requests in flight get at shutdown
	JobGrace           time.Duration // how long cancelled background jobs get at shutdown
	OutboundTimeout    time.Duration // bound of every call to the tracker and the model
	OutboundRetryDelay time.Duration // first backoff of a retried outbound call
}

func loadConfig(getenv func(string) string) config {
	get := func(key, def string) string {
		if v := getenv(key); v != "" {
			return v
		}
		return def
	}
	return config{
		Addr:               get("ADDR", ":8080"),
		DatabasePath:       get("DATABASE_PATH", "forms.db"),
		APIToken:           getenv("API_TOKEN"),
		TrackerEndpoint:    getenv("TRACKER_API_ENDPOINT"),
		TrackerKey:         getenv("TRACKER_API_KEY"),
		TrackerProjectID:   get("TRACKER_PROJECT_ID", "1"),
		GenAIKey:           getenv("GENAI_API_KEY"),
		GenAIBaseURL:       get("GENAI_BASE_URL", "https://generativelanguage.googleapis.com/v1beta/openai"),
		GenAIModel:         get("GENAI_MODEL", "gemini-2.5-flash"),
		TrackerPromptFile:  get("TRACKER_PROMPT_FILE", "prompts/tracker_summary.txt"),
		EmailPromptFile:    get("EMAIL_PROMPT_FILE", "prompts/email_summary.txt"),
		Maildir:            getenv("MAILDIR"),
		SummarySchedule:    getenv("SUMMARY_SCHEDULE"),
		HeaderTimeout:      5 * time.Second,
		RequestGrace:       10 * time.Second,
		JobGrace:           5 * time.Second,
		OutboundTimeout:    60 * time.Second,
		OutboundRetryDelay: 500 * time.Millisecond,
	}
}

// newHTTPServer bounds every phase of a connection, so that a slow or stalled client
// holds a connection only so long: a client sending its headers byte by byte is cut off
// after cfg.HeaderTimeout.
func newHTTPServer(cfg config, h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Addr:              cfg.Addr,
		Handler:           h,
		ReadHeaderTimeout: cfg.HeaderTimeout,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// tuneGC trades memory the service does not need for collector time: a PDF export
// allocates about 20 MB of short-lived garbage (fpdf re-reads its fonts for every
// document), and with Go's default GOGC=100 the collector takes a quarter of the CPU of
// an export. GOGC=400 under a 40 MiB soft limit collects a quarter as often while the
// heap is small, and as often as it must near the limit. GOGC and GOMEMLIMIT in the
// environment, read by the runtime itself, win over these defaults.
func tuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(40 << 20)
	}
}

// run starts the service and blocks until ctx is cancelled (SIGINT or SIGTERM in main),
// then shuts down: stop accepting, finish requests in flight, wait for background jobs,
// close the database. Tests call it with their own ctx, environment and writers.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		return fmt.Errorf("usage: formsvc takes no arguments; configure it with environment variables (see README.md)")
	}
	cfg := loadConfig(getenv)
	if tz := getenv("TZ"); tz != "" {
		// The runtime reads TZ itself; loading it here turns a misspelt zone into an error
		// at start rather than a silent UTC.
		if _, err := time.LoadLocation(tz); err != nil {
			return fmt.Errorf("TZ: %w", err)
		}
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	tuneGC(getenv)

	store, err := OpenStore(ctx, cfg.DatabasePath, time.Now)
	if err != nil {
		return err
	}
	defer store.Close()

	var hour, minute int
	if cfg.SummarySchedule != "" {
		if hour, minute, err = parseSchedule(cfg.SummarySchedule); err != nil {
			return err
		}
	}

	srv := newServer(cfg, store, log, time.Now, &http.Client{})
	httpServer := newHTTPServer(cfg, srv, log)
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	fmt.Fprintf(stdout, "listening on %s\n", ln.Addr())
	log.Info("listening", "addr", ln.Addr().String(), "database", cfg.DatabasePath)
	if cfg.SummarySchedule != "" {
		srv.scheduleSummaries(hour, minute)
	}

	serveErr := make(chan error, 1)
	go func() { serveErr <- httpServer.Serve(ln) }()

	select {
	case err := <-serveErr:
		srv.jobs.stop(cfg.JobGrace)
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.RequestGrace)
	defer cancel()
	err = httpServer.Shutdown(shutdownCtx)
	if err := <-serveErr; !errors.Is(err, http.ErrServerClosed) {
		log.Error("serve", "err", err)
	}
	if err != nil {
		log.Error("shutdown", "err", err)
	}
	if !srv.jobs.stop(cfg.JobGrace) {
		log.Error("background jobs still running after the shutdown grace", "grace", cfg.JobGrace)
	}
	log.Info("stopped")
	return nil
}
