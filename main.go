// Command formsvc is a JSON HTTP service for forms, their responses (with a PDF export),
// daily generated summaries of issue-tracker activity and e-mail, and string settings.
// docs/SPEC.md is its contract and docs/DESIGN.md its decisions; README.md says how to run it.
package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sync/semaphore"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop) // a second signal ends the process at once, as without the handler
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// config is the service's configuration, read from the environment (docs/DESIGN.md's table).
type config struct {
	Addr, DatabasePath, APIToken                  string
	TrackerEndpoint, TrackerKey, TrackerProjectID string
	// TrackerIncludePrivate sends private issues and notes to the model too; then every
	// reader of the summaries reads what they say (docs/SUMMARIES.md).
	TrackerIncludePrivate                                        bool
	GenAIKey, GenAIBaseURL, GenAIModel                           string
	TrackerPromptFile, EmailPromptFile, Maildir, SummarySchedule string
	CORSOrigins, AllowedHosts                                    []string
	// PDFFontDir is the folders (":"-separated) searched first for fallback fonts.
	PDFFontDir string
	// HeaderTimeout bounds how long a client may take to send its headers; RequestGrace and
	// JobGrace are what requests in flight, then jobs (and handlers past RequestGrace) get at
	// shutdown; OutboundTimeout bounds every call to the tracker and the model, whose first
	// backoff is OutboundRetryDelay.
	HeaderTimeout, RequestGrace, JobGrace, OutboundTimeout, OutboundRetryDelay time.Duration
	// WriteTimeout, HeavyWait and UploadWait are writeTimeout, heavyWait and maxUploadWait;
	// tests shorten them.
	WriteTimeout, HeavyWait, UploadWait time.Duration
}

// loadConfig reads the environment: a wrong value is an error naming the variable, not a
// default the operator did not choose; the config holds DatabasePath even then, for a backup.
func loadConfig(getenv func(string) string) (config, error) {
	cfg := config{
		// Loopback unless told otherwise, as PocketBase's serve: without API_TOKEN every
		// client that reaches the port reads and changes every form.
		Addr:               cmp.Or(getenv("ADDR"), "127.0.0.1:8080"),
		DatabasePath:       cmp.Or(getenv("DATABASE_PATH"), "forms.db"),
		APIToken:           getenv("API_TOKEN"),
		TrackerEndpoint:    getenv("TRACKER_API_ENDPOINT"),
		TrackerKey:         getenv("TRACKER_API_KEY"),
		TrackerProjectID:   cmp.Or(getenv("TRACKER_PROJECT_ID"), "1"),
		GenAIKey:           getenv("GENAI_API_KEY"),
		GenAIBaseURL:       cmp.Or(getenv("GENAI_BASE_URL"), "https://generativelanguage.googleapis.com/v1beta/openai"),
		GenAIModel:         cmp.Or(getenv("GENAI_MODEL"), "gemini-2.5-flash"),
		TrackerPromptFile:  getenv("TRACKER_PROMPT_FILE"), // "": the built-in template
		EmailPromptFile:    getenv("EMAIL_PROMPT_FILE"),
		Maildir:            getenv("MAILDIR"),
		SummarySchedule:    getenv("SUMMARY_SCHEDULE"),
		CORSOrigins:        splitList(getenv("CORS_ORIGINS"), ","),
		AllowedHosts:       splitList(getenv("ALLOWED_HOSTS"), ","),
		PDFFontDir:         getenv("PDF_FONT_DIR"),
		HeaderTimeout:      5 * time.Second,
		RequestGrace:       10 * time.Second,
		JobGrace:           5 * time.Second,
		OutboundTimeout:    60 * time.Second,
		OutboundRetryDelay: 500 * time.Millisecond,
		WriteTimeout:       writeTimeout,
		HeavyWait:          heavyWait,
		UploadWait:         maxUploadWait,
	}
	if err := checkTZ(getenv("TZ")); err != nil {
		return cfg, fmt.Errorf("TZ: %w", err)
	}
	if id, ok := parseDigits(cfg.TrackerProjectID); !ok || id < 1 {
		return cfg, fmt.Errorf("TRACKER_PROJECT_ID %q: want a project's number", cfg.TrackerProjectID)
	}
	if err := cmp.Or(checkURL("TRACKER_API_ENDPOINT", cfg.TrackerEndpoint),
		checkURL("GENAI_BASE_URL", cfg.GenAIBaseURL)); err != nil {
		return cfg, err
	}
	// "1" or "TRUE" is refused too: what opens private content to every reader is spelt one way.
	v := getenv("TRACKER_INCLUDE_PRIVATE")
	if v != "" && v != "true" && v != "false" {
		return cfg, fmt.Errorf("TRACKER_INCLUDE_PRIVATE %q: want true or false", v)
	}
	cfg.TrackerIncludePrivate = v == "true"
	return cfg, nil
}

// checkURL refuses a base URL that is set but not http or https with a host
// ("localhost:11434/v1"), at start, not at the first summary. The message leaves out the
// value: a URL may carry a password.
func checkURL(variable, value string) error {
	u, err := url.Parse(value)
	if value != "" && (err != nil || u.Host == "" || u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("%s: want an http or https URL, e.g. https://host/path", variable)
	}
	return nil
}

// logOpenAccess warns the operator at start-up when the API is open to all who reach it.
func logOpenAccess(log *slog.Logger, cfg config, addr net.Addr) {
	if cfg.APIToken != "" {
		return
	}
	log.Info("no API_TOKEN: /api serves only Host names localhost, IP addresses and ALLOWED_HOSTS")
	// The unspecified address (ADDR=:8080) is every interface.
	if tcp, ok := addr.(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
		log.Warn("no API_TOKEN and listening beyond loopback: anyone who can reach this address reads and changes every form, response, summary and setting; set API_TOKEN", "addr", addr.String())
	} else if len(cfg.AllowedHosts) > 0 { // served by those names, through a proxy on this machine
		log.Warn("no API_TOKEN and ALLOWED_HOSTS set: anyone who reaches these host names reads and changes every form, response, summary and setting; set API_TOKEN", "hosts", strings.Join(cfg.AllowedHosts, ","))
	}
}

// splitList splits a configured list, dropping blanks around and between items.
func splitList(s, sep string) []string {
	items := strings.Split(s, sep)
	for i, item := range items {
		items[i] = strings.TrimSpace(item)
	}
	return slices.DeleteFunc(items, func(item string) bool { return item == "" })
}

// writeTimeout bounds the time from a request's headers to the end of its reply, or of
// each page of a list (sendPage).
const writeTimeout = 60 * time.Second

// newHTTPServer bounds every phase of a connection: a slow or stalled client holds one so long.
func newHTTPServer(cfg config, h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Addr:              cfg.Addr,
		Handler:           h,
		ReadHeaderTimeout: cfg.HeaderTimeout,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       120 * time.Second,
		ConnState:         (&connLimit{max: maxConnections}).track,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// checkTZ loads TZ's zone as the runtime does for time.Local (a leading ":" dropped, a path
// read as a zone file), so that a misspelt zone fails the start, not falls back to UTC.
func checkTZ(tz string) error {
	tz = strings.TrimPrefix(tz, ":")
	if !strings.HasPrefix(tz, "/") {
		_, err := time.LoadLocation(tz) // "" is UTC
		return err
	}
	data, err := os.ReadFile(tz)
	if err != nil {
		return err
	}
	_, err = time.LoadLocationFromTZData(tz, data)
	return err
}

// run runs the command args names (backup DEST, prompt KIND [DATE]); with none, it serves
// until ctx is cancelled (SIGINT or SIGTERM in main), then shuts down: stop accepting,
// finish requests in flight, wait for jobs, close.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := loadConfig(getenv)
	switch {
	case len(args) == 2 && args[0] == "backup":
		// DATABASE_PATH alone: a typo in another setting must not stop the nightly copy.
		return backup(ctx, cfg.DatabasePath, args[1], stdout)
	case err != nil:
		return err
	case (len(args) == 2 || len(args) == 3) && args[0] == "prompt":
		return printPrompt(ctx, cfg, args[1], args[2:], stdout, stderr)
	case len(args) > 0:
		return errors.New(usage)
	}
	var hour, minute int
	if cfg.SummarySchedule != "" {
		if hour, minute, err = parseSchedule(cfg.SummarySchedule); err != nil {
			return err
		}
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	ln, err := net.Listen("tcp", cfg.Addr) // first, so that a bad ADDR creates no database
	if err != nil {
		return fmt.Errorf("ADDR: %w", err)
	}
	store, err := OpenStore(ctx, cfg.DatabasePath, time.Now)
	if err != nil {
		ln.Close()
		return fmt.Errorf("DATABASE_PATH: %w", err)
	}
	srv := newServer(cfg, store, log, time.Now, &http.Client{})
	httpServer := newHTTPServer(cfg, srv, log)
	log.Info("listening", "addr", ln.Addr().String(), "database", cfg.DatabasePath)
	logSummaryReadiness(log, cfg)
	logOpenAccess(log, cfg, ln.Addr())
	if cfg.SummarySchedule != "" {
		srv.scheduleSummaries(hour, minute)
	}

	serveErr := make(chan error, 1)
	go func() { serveErr <- httpServer.Serve(ln) }()
	select {
	case err = <-serveErr:
		err = fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
		log.Info("shutting down")
		srv.stopServing(httpServer, serveErr)
	}
	srv.closeStore()
	log.Info("stopped")
	return err
}

const usage = "usage: formsvc (serve, configured by environment variables: see README.md), " +
	"formsvc backup DEST, or formsvc prompt tracker|email [YYYY-MM-DD]"

// backup writes a copy of the database at path to dest (formsvc backup DEST). The line
// on stdout is a courtesy: failing to write it (cron closed stdout) does not fail the backup.
func backup(ctx context.Context, path, dest string, stdout io.Writer) error {
	size, err := Backup(ctx, path, dest)
	if err != nil {
		return fmt.Errorf("backup of %s: %w", path, err)
	}
	fmt.Fprintf(stdout, "backup of %s written to %s (%d bytes, integrity_check ok)\n",
		path, dest, size)
	return nil
}

// stopServing stops accepting and gives the requests in flight cfg.RequestGrace; past it,
// closing their connections cancels their contexts. serveErr is Serve's result.
func (s *server) stopServing(hs *http.Server, serveErr <-chan error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.RequestGrace)
	defer cancel()
	if hs.Shutdown(ctx) != nil {
		s.log.Error("requests still running after the shutdown grace; closing their connections", "grace", s.cfg.RequestGrace)
		hs.Close()
	}
	if err := <-serveErr; !errors.Is(err, http.ErrServerClosed) {
		s.log.Error("serve", "err", err)
	}
}

// closeStore cancels the jobs, waits cfg.JobGrace for them and the handlers still
// running, then closes the store and reports whether it did. Work still running keeps it
// open: closing would fail its last statements, and the WAL keeps every commit.
func (s *server) closeStore() bool {
	s.closingMu.Lock()
	s.closing = true
	s.closingMu.Unlock()
	jobs := make(chan bool, 1)
	go func() { jobs <- s.jobs.stop(s.cfg.JobGrace) }()
	handlersDone := waitGroupWithin(&s.handlers, s.cfg.JobGrace)
	if jobsDone := <-jobs; !jobsDone || !handlersDone {
		s.log.Error("work still running after the shutdown grace: database left open",
			"jobs", !jobsDone, "handlers", !handlersDone, "grace", s.cfg.JobGrace)
		return false
	}
	if err := s.store.Close(); err != nil {
		s.log.Error("close database", "err", err)
	}
	return true
}

// waitGroupWithin waits for wg up to d and reports whether it finished.
func waitGroupWithin(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// Limits that no real form or client reaches, and the bounds on what all clients
// together may hold: docs/DESIGN.md's "Limits" table. The others sit beside what they
// bound: the PDF's (pdfMaxPages) in pdf.go, the pages of lists, the form cache and a
// write's wait for the write connection (writeWait) in store.go, the tracker's and the
// model's answers in tracker.go, prompts and mail in summaries.go, the timeouts of a
// connection in newHTTPServer.
const (
	maxBodyBytes        = 1 << 20 // a request body: 413
	maxTitleChars       = 1_000   // a form title: 400
	maxLabelChars       = 1_000   // a field label or a category name: 500, as the field rules (SPEC.md §7)
	maxDescriptionChars = 10_000  // a form or field description: 400 for the form's, 500 for a field's
	maxValueChars       = 100_000 // a submitted value, as String(value) writes it: 400
	maxCategories       = 100     // per form: 400
	maxFields           = 1_000   // per form, all categories together: 400
	maxSummaryPage      = 100     // `limit` of a summary list is read as at most this

	// maxConnections bounds the open connections; one more is refused 503 and closed. It
	// bounds what the requests below the other limits hold: a body up to smallBodyBytes, an
	// answer up to largeAnswer.
	maxConnections = 2048
	// maxUploadBytes bounds the bodies over smallBodyBytes (or of unknown length, counted
	// as maxBodyBytes) held at once, from before they are read until their request is
	// answered; one that finds no room within maxUploadWait is refused 503 unread.
	maxUploadBytes = 64 << 20
	maxUploadWait  = 2 * time.Second
	smallBodyBytes = 64 << 10
	// heavySlots bound the answers that may be large (a PDF, a list, the CSV, a form
	// whose JSON may pass largeAnswer, a setting, the summaries), each slot held from
	// before its answer is read until it is sent; one that finds none within heavyWait is
	// refused 503. Reads only: no write waits for one.
	heavySlots  = 8
	heavyWait   = 10 * time.Second
	largeAnswer = 64 << 10
)

// server holds the dependencies of every handler; tests build their own.
type server struct {
	cfg     config
	store   *Store
	log     *slog.Logger
	now     func() time.Time
	mux     *http.ServeMux
	handler http.Handler // mux behind the middleware
	client  *http.Client // for the outbound calls
	jobs    *summaryJobs
	// handlers counts the requests being served, for shutdown; once closing is set (under
	// closingMu) no request is counted any more, so that every Add comes before the Wait.
	handlers  sync.WaitGroup
	closingMu sync.RWMutex
	closing   bool
	slots     *semaphore.Weighted // heavySlots
	uploads   *semaphore.Weighted // maxUploadBytes
	fonts     *fontIndex          // the PDF's fallback fonts, found once
	zlibs     sync.Pool           // *zlib.Writer, reused for the PDF's pages (compressPages)
}

func newServer(cfg config, store *Store, log *slog.Logger, now func() time.Time, client *http.Client) *server {
	s := &server{
		cfg:     cfg,
		store:   store,
		log:     log,
		now:     now,
		mux:     http.NewServeMux(),
		client:  client,
		jobs:    newSummaryJobs(now),
		slots:   semaphore.NewWeighted(heavySlots),
		uploads: semaphore.NewWeighted(maxUploadBytes),
		fonts:   newFontIndex(fontDirs(cfg.PDFFontDir)),
	}
	for pattern, h := range s.routes() {
		s.mux.Handle(pattern, s.handle(h))
	}
	s.mux.Handle("/", s.handle(s.handleNoRoute)) // JSON, not the mux's plain text
	s.handler = s.logRequests(s.recoverPanics(s.guardAPI(s.readBody(s.mux))))
	return s
}

// handlerFunc is a handler that writes its reply, or returns the error to reply with.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// routes lists the whole API, as docs/openapi.json documents it.
func (s *server) routes() map[string]handlerFunc {
	return map[string]handlerFunc{
		"GET /healthz":                               s.handleHealth,
		"GET /api/openapi.json":                      s.handleOpenAPI,
		"GET /api/forms":                             s.heavy(s.handleListForms),
		"POST /api/forms":                            s.handleCreateForm,
		"GET /api/forms/{id}":                        s.handleGetForm, // heavy when large
		"PUT /api/forms/{id}":                        s.handleUpdateForm,
		"DELETE /api/forms/{id}":                     s.handleDeleteForm,
		"POST /api/forms/{id}/responses":             s.handleSubmitResponse,
		"GET /api/forms/{id}/responses":              s.heavy(s.handleListResponses),
		"GET /api/forms/{id}/responses.csv":          s.heavy(s.handleExportCSV),
		"GET /api/responses/{responseId}/export/pdf": s.heavy(s.handleExportPDF),
		"GET /api/tracker-summary/today":             s.heavy(s.handleTodayTrackerSummary),
		"GET /api/tracker-summaries":                 s.heavy(s.handleListTrackerSummaries),
		"POST /api/tracker-summaries/generate":       s.handleGenerateTrackerSummary,
		"GET /api/tracker-summary":                   s.handleTrackerSummaryNow, // heavy once run
		"GET /api/email-summaries":                   s.heavy(s.handleListEmailSummaries),
		"POST /api/email-summaries/generate":         s.handleGenerateEmailSummary,
		"GET /api/settings/{key}":                    s.heavy(s.handleGetSetting),
		"PUT /api/settings/{key}":                    s.handlePutSetting,
	}
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// handle adapts a handlerFunc to net/http.
func (s *server) handle(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.writeError(w, r, err)
		}
	})
}

// logRequests writes one line per request and counts the requests being served, which
// shutdown waits for; the inner handlers get a *statusRecorder.
func (s *server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.closingMu.RLock()
		closing := s.closing
		if !closing {
			s.handlers.Add(1)
		}
		s.closingMu.RUnlock()
		if closing { // begun after its connection was closed at shutdown: the store may be gone
			s.writeError(w, r, errShuttingDown)
			return
		}
		defer s.handlers.Done()
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		aborted := true // unless next returns: a panic passes through
		defer func() {
			// client is the TCP peer (behind a proxy, the proxy): a header is not trusted.
			s.log.Info("request", "client", r.RemoteAddr, "method", r.Method, "path", r.URL.Path, "status", rec.status,
				"duration", time.Since(start).Round(time.Microsecond), "aborted", aborted)
		}()
		next.ServeHTTP(rec, r)
		aborted = false
	})
}

// statusRecorder remembers the status of a reply and whether any of it was written.
type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (r *statusRecorder) WriteHeader(status int) {
	if !r.wrote {
		r.status, r.wrote = status, true
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// recoverPanics turns a panic into a JSON 500 when nothing of the reply is out yet. Once
// part of it is out, ending the connection is the only way to tell the client it is
// incomplete: net/http does so, without a log of its own, for http.ErrAbortHandler.
func (s *server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			switch v := recover(); v {
			case nil:
			case http.ErrAbortHandler:
				panic(v) // net/http's own way to cut a reply short: passed on
			default:
				s.log.Error("panic", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(v))
				if rec, ok := w.(*statusRecorder); !ok || rec.wrote {
					panic(http.ErrAbortHandler)
				}
				s.writeError(w, r, &apiError{msg: internalError}) // logged above
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// cors lets the original's browser front end, served from another origin, call the API: it
// sets CORS headers for an allowed origin, and reports whether it answered the request (204
// to that origin's preflight).
func (s *server) cors(w http.ResponseWriter, r *http.Request) bool {
	if len(s.cfg.CORSOrigins) == 0 {
		return false
	}
	w.Header().Add("Vary", "Origin") // the reply depends on it, for every cache between
	// Scheme and host are case-insensitive (RFC 3986 6.2.2.1; browsers send them in lower
	// case), so a CORS_ORIGINS entry written in capitals still matches.
	origin := r.Header.Get("Origin")
	allowed := func(o string) bool { return o == "*" || strings.EqualFold(o, origin) }
	if origin == "" || !slices.ContainsFunc(s.cfg.CORSOrigins, allowed) {
		return false
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		h.Set("Access-Control-Expose-Headers", "Content-Disposition") // the download's file name
		return false
	}
	methods := s.routeMethods(r)
	if len(methods) == 0 || !isCleanPath(r.URL.EscapedPath()) {
		return false // no such route: replied to as any other request to it
	}
	h.Set("Access-Control-Allow-Methods", strings.Join(methods, ", "))
	h.Set("Access-Control-Allow-Headers", "Content-Type, Authorization")
	h.Set("Access-Control-Max-Age", "600") // seconds a browser may reuse this preflight
	w.WriteHeader(http.StatusNoContent)
	return true
}

// guardAPI answers CORS preflights, then refuses: with API_TOKEN set, an API request without
// it (401), else one for an unknown Host (403), as a page that makes its own name resolve here
// (DNS rebinding) could read the replies; then a path the mux would redirect in HTML (404).
func (s *server) guardAPI(next http.Handler) http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		api := r.URL.Path == "/api" || strings.HasPrefix(r.URL.Path, "/api/") // else served to all
		switch {
		case s.cors(w, r): // first: browsers send preflights without credentials
			return nil
		case api && s.cfg.APIToken == "" && !s.knownHost(r.Host):
			return &apiError{status: http.StatusForbidden, msg: "Host not allowed"}
		case api && s.cfg.APIToken != "" && !validToken(r.Header.Get("Authorization"), s.cfg.APIToken):
			w.Header().Set("WWW-Authenticate", "Bearer") // RFC 9110: a 401 names its scheme
			return &apiError{status: http.StatusUnauthorized, msg: "Unauthorized"}
		case !isCleanPath(r.URL.EscapedPath()):
			return errNoRoute
		}
		next.ServeHTTP(w, r)
		return nil
	})
}

// knownHost reports whether host (port or not) is localhost, an IP address or in ALLOWED_HOSTS.
func (s *server) knownHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") || net.ParseIP(strings.Trim(host, "[]")) != nil {
		return true
	}
	// Host names are case-insensitive (RFC 9110 4.2.3), in the header and in ALLOWED_HOSTS.
	return slices.ContainsFunc(s.cfg.AllowedHosts, func(h string) bool { return strings.EqualFold(strings.TrimSuffix(h, "."), host) })
}

// validToken checks an Authorization header against "Bearer <token>", the scheme in any
// case, through SHA-256 in constant time: neither content nor length shows in the timing.
func validToken(header, token string) bool {
	scheme, given, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	a, b := sha256.Sum256([]byte(given)), sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// isCleanPath reports whether the escaped path p has no empty, "." or ".." segments and
// no trailing slash, which no route ends in.
func isCleanPath(p string) bool { return path.Clean(p) == p }

// readBody reads and decodes every body before its route, once, as the original's parser
// did: one that is not application/json (415; no cross-site form sends that type without
// a preflight), over maxBodyBytes (413) or not JSON (400) is refused. The handler finds it
// with bodyObject. A large one holds s.uploads until answered.
func (s *server) readBody(next http.Handler) http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		size := r.ContentLength
		if size == 0 {
			next.ServeHTTP(w, r)
			return nil
		}
		if size > maxBodyBytes {
			return errBodyTooLarge // refused from its announced length, unread
		}
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
			return &apiError{status: http.StatusUnsupportedMediaType,
				msg: "Content-Type must be application/json"}
		}
		if size < 0 { // a body of unknown length: as much as it may be
			size = maxBodyBytes
		}
		if size > smallBodyBytes {
			release, err := admit(r.Context(), s.uploads, size, s.cfg.UploadWait)
			if err != nil {
				return err
			}
			defer release() // held until answered: what is decoded from it lives as long
		}
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes))
		dec.UseNumber() // String(value) of a number is JavaScript's (jsText)
		var body any
		err := dec.Decode(&body)
		if err == nil {
			err = dec.Decode(new(any)) // nothing may follow: io.EOF
		}
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return errBodyTooLarge
		}
		if err != io.EOF {
			return invalid("Invalid JSON body")
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), bodyKey{}, body)))
		return nil
	})
}

// heavy runs h, a route whose answer may be large, in a heavy slot (heavySlots).
func (s *server) heavy(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		return s.inHeavySlot(r, func() error { return h(w, r) })
	}
}

// inHeavySlot runs fn once a heavy slot is free, waiting at most heavyWait.
func (s *server) inHeavySlot(r *http.Request, fn func() error) error {
	release, err := admit(r.Context(), s.slots, 1, s.cfg.HeavyWait)
	if err != nil {
		return err
	}
	defer release()
	return fn()
}

// admit waits up to wait for n units of sem and returns what frees them: a crowd gets a
// 503 (errBusy) within seconds, before any work is done, not an endless queue.
func admit(ctx context.Context, sem *semaphore.Weighted, n int64,
	wait time.Duration) (func(), error) {
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := sem.Acquire(wctx, n); err != nil {
		return nil, cmp.Or[error](ctx.Err(), errBusy) // the client left, or the wait ran out
	}
	return func() { sem.Release(n) }, nil
}

// routeMethods lists the methods the route of r's path serves, if any.
func (s *server) routeMethods(r *http.Request) []string {
	var methods []string
	for _, m := range []string{
		http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete,
	} {
		probe := *r
		probe.Method = m
		// "/" is the catch-all (handleNoRoute itself), which every path reaches.
		if _, pattern := s.mux.Handler(&probe); pattern != "/" {
			methods = append(methods, m)
		}
	}
	return methods
}

// handleNoRoute replies to what no pattern matched, in JSON where the mux writes text:
// 405 with Allow when the path exists under another method, else 404.
func (s *server) handleNoRoute(w http.ResponseWriter, r *http.Request) error {
	if allow := s.routeMethods(r); len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		return &apiError{status: http.StatusMethodNotAllowed, msg: "Method not allowed"}
	}
	return errNoRoute
}

// connLimit counts open connections for http.Server.ConnState: one past max is refused 503
// and closed, not left queued in the kernel behind idle ones as netutil.LimitListener does.
type connLimit struct {
	max  int64
	open atomic.Int64
}

// tooManyConnections is the reply to a connection past the cap, before any request.
const tooManyConnections = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: " + jsonType +
	"\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: 33\r\n\r\n" +
	`{"error":"Too many connections"}` + "\n"

func (l *connLimit) track(c net.Conn, state http.ConnState) {
	switch state {
	case http.StateNew:
		if l.open.Add(1) > l.max {
			c.SetWriteDeadline(time.Now().Add(time.Second))
			io.WriteString(c, tooManyConnections)
			c.Close() // net/http then ends the connection as StateClosed
		}
	case http.StateClosed, http.StateHijacked:
		l.open.Add(-1)
	}
}

//go:embed docs/openapi.json
var openAPI []byte // written by hand, kept true by tests

func (s *server) handleOpenAPI(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", jsonType)
	_, err := w.Write(openAPI)
	return clientGone(err)
}

// handleHealth tells a monitor what clients meet; after a refused write it probes with one
// of its own, to turn 200 again with no client writing (a balancer may have taken it out).
func (s *server) handleHealth(w http.ResponseWriter, r *http.Request) error {
	if s.store.WriteRefusal() != "" && s.store.ProbeWrite(r.Context()) != nil {
		// Read again: the probe's failure may be another's (a cancelled request, not a
		// refusal), and a client's write may have gone through since.
		if reason := s.store.WriteRefusal(); reason != "" {
			msg := "Database refuses writes: " + reason
			return &apiError{status: http.StatusServiceUnavailable, msg: msg}
		}
	}
	if err := s.store.Ping(r.Context()); err != nil {
		s.log.Error("health check", "err", err)
		return &apiError{status: http.StatusServiceUnavailable, msg: "Database unavailable"}
	}
	return writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// jsonType is the Content-Type of every body the service sends but the PDF and the CSV.
const jsonType = "application/json; charset=utf-8"

// writeJSON sends v as the JSON body with status, encoded whole first, so that a failure
// is still a clean 500. <, > and & go as they are, as the original's JSON.stringify wrote
// them: escaped, they would take six bytes each.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode reply: %w", err)
	}
	w.Header().Set("Content-Type", jsonType)
	w.WriteHeader(status)
	_, err := w.Write(buf.Bytes())
	return clientGone(err)
}

// sendPage sends page, the next part of a list, and empties it. Each page has the whole
// write timeout of its own: a long list read at a modest pace is not cut, a stalled one is.
func (s *server) sendPage(w http.ResponseWriter, page *bytes.Buffer) error {
	http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	_, err := w.Write(page.Bytes())
	page.Reset()
	return clientGone(err)
}

// errClientGone marks an error writing a reply: writeError logs the client as gone.
var errClientGone = errors.New("client gone")

// clientGone marks err, from writing a reply, as errClientGone; nil stays nil.
func clientGone(err error) error {
	if err != nil {
		return fmt.Errorf("%w: %w", errClientGone, err)
	}
	return nil
}

// retrySeconds is a Retry-After: whole seconds, at least 1.
func retrySeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// apiError is the service's one error type, as wtf's Error: status is the reply's, msg what
// the client reads (written by the handler or by during, never taken from a cause), err
// the cause. Status 0 is a failure of ours: a 500 whose cause is logged, never shown. A
// 500 set explicitly (rejected) is one whose message the client reads, and nothing is
// logged: a form rule broken (docs/SPEC.md §7), a PDF past its pages.
type apiError struct {
	status int
	msg    string
	err    error
	// retryAfter is when a refused request (503) may come again, or a second.
	retryAfter time.Duration
}

func (e *apiError) Error() string {
	if e.err != nil {
		return e.msg + ": " + e.err.Error()
	}
	return e.msg
}

func (e *apiError) Unwrap() error { return e.err }

// invalid is the 400 of a request that breaks one of the API's rules.
func invalid(msg string) error {
	return &apiError{status: http.StatusBadRequest, msg: msg}
}

// rejected is a 500 the client reads the reason of: a form rule broken (docs/SPEC.md §7
// makes those 500s), missing configuration, a PDF past its pages.
func rejected(msg string) error {
	return &apiError{status: http.StatusInternalServerError, msg: msg}
}

const internalError = "Internal server error"

var (
	errNoRoute = &apiError{status: http.StatusNotFound, msg: "Not found"}
	errBusy    = &apiError{status: http.StatusServiceUnavailable, msg: "Server busy, retry later"}
	// errShuttingDown answers a request that begins once shutdown has closed its connection.
	errShuttingDown = &apiError{status: http.StatusServiceUnavailable, msg: "Shutting down"}
	errBodyTooLarge = &apiError{
		status: http.StatusRequestEntityTooLarge,
		msg:    "Request body too large",
	}
)

// during names the operation err happened in (SPEC.md §7's <context>), and is where the
// store's errors become statuses: a failure of ours reads "Failed to update form 7:
// internal error" (the cause only logged), a broken rule (RuleError) "Failed to create
// form: Field label is required", a missing record (ErrNotFound) "update form 7: Record
// not found", a write that found the database busy (ErrBusy) errBusy; the client's own
// keep their message.
func during(op string, err error) error {
	ae, ok := errors.AsType[*apiError](err)
	rule, broken := errors.AsType[RuleError](err)
	switch {
	case err == nil:
		return nil
	case broken:
		return &apiError{status: http.StatusInternalServerError,
			msg: "Failed to " + op + ": " + string(rule)}
	case errors.Is(err, ErrNotFound):
		return &apiError{status: http.StatusNotFound, msg: op + ": Record not found", err: err}
	case errors.Is(err, ErrBusy):
		return errBusy
	case !ok:
		return &apiError{msg: "Failed to " + op + ": internal error", err: err}
	case ae.status == http.StatusInternalServerError: // rejected's: its reason is the client's
		return &apiError{status: ae.status, msg: "Failed to " + op + ": " + ae.msg, err: err}
	}
	return err
}

// missing is the error of a read whose record does not exist, in docs/SPEC.md §7's words
// for it (msg: "Form not found"); any other error is passed to during.
func missing(op string, err error, msg string) error {
	if errors.Is(err, ErrNotFound) {
		return &apiError{status: http.StatusNotFound, msg: msg}
	}
	return during(op, err)
}

// writeError is the one place where errors become statuses: a failure of ours is logged
// whole, its client reads no cause; a client that left gets nothing (logged 499, as nginx).
func (s *server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	rec, _ := w.(*statusRecorder)
	if errors.Is(err, errClientGone) || errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		s.log.Info("client gone", "method", r.Method, "path", r.URL.Path, "err", err)
		if rec != nil {
			rec.status = 499
		}
		return
	}
	ae, ok := errors.AsType[*apiError](err)
	if !ok {
		ae = &apiError{msg: internalError, err: err}
	}
	switch {
	case rec != nil && rec.wrote:
		// Part of a list is out: the connection ends before the body does, so that the
		// client sees it incomplete (SPEC.md), a CSV cut between two pages too, which
		// would still parse. net/http ends it so for http.ErrAbortHandler.
		s.log.Error("reply cut", "method", r.Method, "path", r.URL.Path, "err", err)
		panic(http.ErrAbortHandler)
	case ae.status == 0 && ae.err != nil: // a failure of ours; not an explicit 500 (rejected)
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	case ae.status == http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", strconv.Itoa(retrySeconds(ae.retryAfter)))
	}
	status := cmp.Or(ae.status, http.StatusInternalServerError)
	writeJSON(w, status, map[string]string{"error": ae.msg})
}

// jsonObject is a JSON object of a body, as readBody decoded it: its members by exact name
// (encoding/json would take {"Title": …} for title; of a name given twice the last
// counts, as in JavaScript), numbers as json.Number. path is its place in the body
// ("categories[0]"; "" for the body), which a wrong member's message names.
type jsonObject struct {
	members map[string]any
	path    string
}

// bodyKey is the request context's key of the body readBody decoded.
type bodyKey struct{}

// bodyObject is r's body as an object. No body, null or an array (the original read an
// array's members as undefined) is one without members.
func bodyObject(r *http.Request) (jsonObject, error) {
	v := r.Context().Value(bodyKey{})
	if _, isArray := v.([]any); isArray {
		v = nil
	}
	if o, err := readObject(v, ""); err == nil {
		return o, nil
	}
	return jsonObject{}, invalid("Invalid JSON body: expected an object")
}

// readObject reads v, a decoded value at path, as an object; null is one without members.
func readObject(v any, path string) (jsonObject, error) {
	members, ok := v.(map[string]any)
	if !ok && v != nil {
		return jsonObject{}, invalid(fmt.Sprintf("Invalid JSON body: %s must be an object", path))
	}
	return jsonObject{members: members, path: path}, nil
}

func (o jsonObject) at(name string) string { return strings.TrimPrefix(o.path+"."+name, ".") }

// str is the member name, a string; nil when it is absent or null.
func (o jsonObject) str(name string) (*string, error) {
	switch v := o.members[name].(type) {
	case nil:
		return nil, nil
	case string:
		return &v, nil
	}
	return nil, invalid(fmt.Sprintf("Invalid JSON body: %s must be a string", o.at(name)))
}

// list reads the member name, if any, an array of objects, each read by read.
func list[T any](o jsonObject, name string, read func(jsonObject) (T, error)) ([]T, error) {
	items, ok := o.members[name].([]any)
	if !ok && o.members[name] != nil {
		return nil, invalid(fmt.Sprintf("Invalid JSON body: %s must be an array", o.at(name)))
	}
	out := make([]T, len(items))
	for i, v := range items {
		item, err := readObject(v, fmt.Sprintf("%s[%d]", o.at(name), i))
		if err != nil {
			return nil, err
		}
		if out[i], err = read(item); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// parseID reads an id in a path or a key of values: base-10 digits only (docs/DESIGN.md).
// Digits beyond int64 are the id of no row, as to the original's parseInt: 0.
func parseID(s string) (int64, bool) {
	n, ok := parseDigits(s)
	return max(n, 0), ok
}

// parseDigits reads s when it is ASCII digits only; beyond int64 as -1.
func parseDigits(s string) (int64, bool) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return -1, true // out of range, the one error digits can give
	}
	return n, true
}
