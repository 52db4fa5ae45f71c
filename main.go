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
	"maps"
	"math"
	"mime"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second signal ends the process at once, as without the handler
	}()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// config is the service's configuration, read from the environment (docs/DESIGN.md's table).
type config struct {
	Addr             string
	DatabasePath     string
	APIToken         string
	TrackerEndpoint  string
	TrackerKey       string
	TrackerProjectID string
	// TrackerIncludePrivate sends private issues and notes to the model too; then every
	// reader of the summaries reads what they say (README, Summaries).
	TrackerIncludePrivate bool
	GenAIKey              string
	GenAIBaseURL          string
	GenAIModel            string
	TrackerPromptFile     string
	EmailPromptFile       string
	Maildir               string
	SummarySchedule       string
	CORSOrigins           []string      // origins allowed to call the API from a browser; "*" is any
	AllowedHosts          []string      // Host names served without API_TOKEN besides localhost and IP addresses
	PDFFontDir            string        // folders (":"-separated) searched first for fallback fonts
	HeaderTimeout         time.Duration // how long a client may take to send its headers
	RequestGrace          time.Duration // how long requests in flight get at shutdown
	JobGrace              time.Duration // how long cancelled background jobs (and handlers past RequestGrace) get at shutdown
	OutboundTimeout       time.Duration // bound of every call to the tracker and the model
	OutboundRetryDelay    time.Duration // first backoff of a retried outbound call
}

func loadConfig(getenv func(string) string) config {
	get := func(key, def string) string {
		if v := getenv(key); v != "" {
			return v
		}
		return def
	}
	return config{
		// Loopback unless told otherwise, as PocketBase's serve: without API_TOKEN every
		// client that reaches the port reads and changes every form.
		Addr:                  get("ADDR", "127.0.0.1:8080"),
		DatabasePath:          get("DATABASE_PATH", "forms.db"),
		APIToken:              getenv("API_TOKEN"),
		TrackerEndpoint:       getenv("TRACKER_API_ENDPOINT"),
		TrackerKey:            getenv("TRACKER_API_KEY"),
		TrackerProjectID:      get("TRACKER_PROJECT_ID", "1"),
		TrackerIncludePrivate: getenv("TRACKER_INCLUDE_PRIVATE") == "true",
		GenAIKey:              getenv("GENAI_API_KEY"),
		GenAIBaseURL:          get("GENAI_BASE_URL", "https://generativelanguage.googleapis.com/v1beta/openai"),
		GenAIModel:            get("GENAI_MODEL", "gemini-2.5-flash"),
		TrackerPromptFile:     getenv("TRACKER_PROMPT_FILE"), // "": the built-in template
		EmailPromptFile:       getenv("EMAIL_PROMPT_FILE"),
		Maildir:               getenv("MAILDIR"),
		SummarySchedule:       getenv("SUMMARY_SCHEDULE"),
		CORSOrigins:           splitList(getenv("CORS_ORIGINS"), ","),
		AllowedHosts:          splitList(getenv("ALLOWED_HOSTS"), ","),
		PDFFontDir:            getenv("PDF_FONT_DIR"),
		HeaderTimeout:         5 * time.Second,
		RequestGrace:          10 * time.Second,
		JobGrace:              5 * time.Second,
		OutboundTimeout:       60 * time.Second,
		OutboundRetryDelay:    500 * time.Millisecond,
	}
}

// summaryConfigGaps names the settings the tracker and the e-mail summary still lack: the
// start-up log says which summaries can run, since a failed job only shows in the log
// (docs/SPEC.md keeps it out of the caller's answer).
func summaryConfigGaps(cfg config) (tracker, email []string) {
	var model []string
	if cfg.GenAIKey == "" {
		model = append(model, "GENAI_API_KEY")
	}
	tracker = slices.Clone(model)
	if cfg.TrackerEndpoint == "" {
		tracker = append(tracker, "TRACKER_API_ENDPOINT")
	}
	if cfg.TrackerKey == "" {
		tracker = append(tracker, "TRACKER_API_KEY")
	}
	email = slices.Clone(model)
	if cfg.Maildir == "" {
		email = append(email, "MAILDIR")
	}
	return tracker, email
}

// logSummaryReadiness says at start-up, for each summary, whether it can run, and if not
// why: a failed job shows only in the log (docs/SPEC.md keeps it out of the caller's answer).
func logSummaryReadiness(log *slog.Logger, cfg config) {
	trackerGaps, emailGaps := summaryConfigGaps(cfg)
	for _, kind := range []struct {
		name     string
		template func(config) (string, error)
		missing  []string
	}{{trackerJob, trackerTemplate, trackerGaps}, {emailJob, emailTemplate, emailGaps}} {
		_, promptErr := kind.template(cfg)
		if promptErr != nil {
			log.Error("summaries cannot run: prompt template not readable", "kind", kind.name, "err", promptErr)
		}
		if len(kind.missing) > 0 {
			log.Warn("summaries cannot run until configured", "kind", kind.name, "missing", strings.Join(kind.missing, ", "))
		}
		if promptErr == nil && len(kind.missing) == 0 {
			log.Info("summaries configured", "kind", kind.name, "model", cfg.GenAIModel)
		}
	}
}

// isLoopback reports whether addr, a listener's address, is reachable from this machine
// only. The unspecified address (ADDR=:8080) is every interface.
func isLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// splitList splits a configured list, dropping blanks around and between items.
func splitList(s, sep string) []string {
	var items []string
	for _, item := range strings.Split(s, sep) {
		if item = strings.TrimSpace(item); item != "" {
			items = append(items, item)
		}
	}
	return items
}

// writeTimeout bounds the time from a request's headers to the end of its answer.
const writeTimeout = 60 * time.Second

// newHTTPServer bounds every phase of a connection, so that a slow or stalled client
// holds a connection only so long: a client sending its headers byte by byte is cut off
// after cfg.HeaderTimeout.
func newHTTPServer(cfg config, h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Addr:              cfg.Addr,
		Handler:           h,
		ReadHeaderTimeout: cfg.HeaderTimeout,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// checkTZ loads the zone TZ names, as the runtime reads it for time.Local (a leading
// ":" dropped, an absolute path read as a zone file, else a zone name), so that a
// misspelt zone is an error at start rather than the silent UTC the runtime falls back to.
func checkTZ(tz string) error {
	tz = strings.TrimPrefix(tz, ":")
	switch {
	case tz == "":
		return nil
	case strings.HasPrefix(tz, "/"):
		data, err := os.ReadFile(tz)
		if err != nil {
			return err
		}
		_, err = time.LoadLocationFromTZData(tz, data)
		return err
	default:
		_, err := time.LoadLocation(tz)
		return err
	}
}

// run starts the service and blocks until ctx is cancelled (SIGINT or SIGTERM in main),
// then shuts down: stop accepting, finish requests in flight, wait for background jobs,
// close the database. Tests call it with their own ctx, environment and writers.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg := loadConfig(getenv)
	switch {
	case len(args) == 2 && args[0] == "backup":
		size, err := Backup(ctx, cfg.DatabasePath, args[1])
		if err != nil {
			return fmt.Errorf("backup of %s: %w", cfg.DatabasePath, err)
		}
		fmt.Fprintf(stdout, "backup of %s written to %s (%d bytes, integrity_check ok)\n", cfg.DatabasePath, args[1], size)
		return nil
	case len(args) > 0:
		return fmt.Errorf("usage: formsvc (serve, configured by environment variables: see README.md), or formsvc backup DEST")
	}
	if err := checkTZ(getenv("TZ")); err != nil {
		return fmt.Errorf("TZ: %w", err)
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))

	store, err := OpenStore(ctx, cfg.DatabasePath, time.Now)
	if err != nil {
		return fmt.Errorf("DATABASE_PATH: %w", err)
	}
	var hour, minute int
	if cfg.SummarySchedule != "" {
		if hour, minute, err = parseSchedule(cfg.SummarySchedule); err != nil {
			store.Close()
			return err
		}
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		store.Close()
		return fmt.Errorf("listen: %w", err)
	}
	ln = &limitListener{Listener: ln, slots: make(chan struct{}, maxConnections)}
	srv := newServer(cfg, store, log, time.Now, &http.Client{})
	httpServer := newHTTPServer(cfg, srv, log)
	fmt.Fprintf(stdout, "listening on %s\n", ln.Addr())
	log.Info("listening", "addr", ln.Addr().String(), "database", cfg.DatabasePath)
	logSummaryReadiness(log, cfg)
	if cfg.APIToken == "" {
		log.Info("no API_TOKEN: /api answers only Host names localhost, IP addresses and ALLOWED_HOSTS")
		switch {
		case !isLoopback(ln.Addr()):
			log.Warn("no API_TOKEN and listening beyond loopback: anyone who can reach this address reads and changes every form, response, summary and setting; set API_TOKEN", "addr", ln.Addr().String())
		case len(cfg.AllowedHosts) > 0: // served by those names, through a proxy on this machine
			log.Warn("no API_TOKEN and ALLOWED_HOSTS set: anyone who reaches these host names reads and changes every form, response, summary and setting; set API_TOKEN", "hosts", strings.Join(cfg.AllowedHosts, ","))
		}
	}
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

// stopServing stops accepting and gives the requests in flight cfg.RequestGrace to end.
// Past it, their connections are closed, which cancels their contexts, so that their
// handlers return soon. serveErr is Serve's result.
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

// closeStore cancels the background jobs, waits for them and for the request handlers
// still running, cfg.JobGrace for both together, so that the process ends within
// RequestGrace + JobGrace of the signal, and then closes the store. With work still
// running it leaves the store open: closing the database under that work would turn
// its last statements into errors, the process ends anyway, and the WAL keeps every
// commit. It reports whether it closed the store.
func (s *server) closeStore() bool {
	var jobsDone bool
	var stopping sync.WaitGroup
	stopping.Go(func() { jobsDone = s.jobs.stop(s.cfg.JobGrace) })
	handlersDone := waitGroupWithin(&s.handlers, s.cfg.JobGrace)
	stopping.Wait()
	if !jobsDone {
		s.log.Error("background jobs still running after the shutdown grace", "grace", s.cfg.JobGrace)
	}
	if !handlersDone {
		s.log.Error("request handlers still running after their connections were closed", "grace", s.cfg.JobGrace)
	}
	if !jobsDone || !handlersDone {
		s.log.Error("database left open for the work still running")
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
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-done:
		return true
	case <-timer.C:
		return false
	}
}

// Limits that no real form or client reaches, and the bounds on what all clients
// together may hold, each listed in docs/DESIGN.md's "Limits" table with the answer a
// client gets past it. Those a client meets are written here; the rest beside the code
// they bound: pdfMaxPages and pdfNameBudget (pdf.go), maxSettingKeyBytes (settings.go),
// the prompt's and the mail reader's bounds (summaries.go), the tracker's pages and the
// outbound answer size (tracker.go), a list's page (store.go) and the connection
// timeouts (newHTTPServer, loadConfig).
const (
	maxBodyBytes        = 1 << 20 // a request body: 413
	maxTitleChars       = 1_000   // a form title: 400
	maxLabelChars       = 1_000   // a field label or a category name: 500, as the field rules (SPEC.md §7)
	maxDescriptionChars = 10_000  // a form or field description: 400 for the form's, 500 for a field's
	maxValueChars       = 100_000 // a submitted value, as String(value) writes it: 400
	maxCategories       = 100     // per form: 400
	maxFields           = 1_000   // per form, all categories together: 400
	maxSummaryPage      = 100     // `limit` of a summary list is read as at most this

	// maxConnections bounds the open connections; one more is answered 503 and closed.
	maxConnections = 2048
	// maxUploadBytes bounds the request bodies being read and held at once; a body
	// that finds no room within maxUploadWait is refused 503. Small bodies (at most
	// smallBodyBytes, every ordinary request) go in without it: maxConnections bounds
	// them, and a crowd of stalled large uploads cannot hold them up.
	maxUploadBytes = 64 << 20
	maxUploadWait  = 2 * time.Second
	smallBodyBytes = 64 << 10
	// maxAnswersBytes bounds the answers built and not yet read by their clients; an
	// answer that finds no room within maxAnswerWait is refused 503. Small answers
	// (under smallAnswerBytes) go out without it: maxConnections bounds them.
	maxAnswersBytes  = 64 << 20
	maxAnswerWait    = 5 * time.Second
	smallAnswerBytes = 64 << 10
	// heavyQueue waiters at most wait up to heavyWait for one of the heavy slots (see
	// server.heavy); past either bound the answer is 503.
	heavyQueue = 32
	heavyWait  = 10 * time.Second
	// writeSlots requests that change data run at once; writeQueue more wait, each up
	// to writeWait; past either bound the answer is 503 (see queueWrites). writeWait is
	// half the shutdown's grace for requests in flight, so that a writer let in at the
	// last moment still has time to finish.
	writeSlots = 4
	writeQueue = 256
	writeWait  = 5 * time.Second
)

// server holds the dependencies of every handler; tests build their own.
type server struct {
	cfg   config
	store *Store
	log   *slog.Logger
	now   func() time.Time
	mux   *http.ServeMux
	// handler is mux behind the middleware (see newServer).
	handler http.Handler
	// client makes the outbound calls to the tracker and the model.
	client *http.Client
	jobs   *summaryJobs
	// handlers counts the requests being served, so that shutdown closes the database
	// only after the last one has returned.
	handlers sync.WaitGroup
	// heavy admits the answers that are CPU-bound to build (a PDF, a page of a response
	// list or CSV), as many at once as there are cores: more at once would only add
	// memory. Held while the data is read and the answer built, never while a client reads.
	heavy *gate
	// uploads bounds the bytes of request bodies in memory (maxUploadBytes), answers
	// the bytes of answers in memory (maxAnswersBytes).
	uploads, answers *gate
	// writes admits the requests that change data (see queueWrites).
	writes *gate
	// fonts are the PDF's fallback fonts, found once here rather than per export.
	fonts *fontIndex
}

func newServer(cfg config, store *Store, log *slog.Logger, now func() time.Time, client *http.Client) *server {
	cores := int64(runtime.GOMAXPROCS(0))
	s := &server{
		cfg:     cfg,
		store:   store,
		log:     log,
		now:     now,
		mux:     http.NewServeMux(),
		client:  client,
		jobs:    newSummaryJobs(now),
		heavy:   newGate(cores, heavyQueue, heavyWait),
		uploads: newGate(maxUploadBytes, maxConnections, maxUploadWait),
		answers: newGate(maxAnswersBytes, maxConnections, maxAnswerWait),
		writes:  newGate(writeSlots, writeQueue, writeWait),
		fonts:   newFontIndex(fontDirs(cfg.PDFFontDir)),
	}
	for _, rt := range s.routes() {
		s.mux.Handle(rt.pattern, s.answer(rt.handler))
	}
	// Whatever no pattern matches: JSON 404 or 405 rather than the mux's plain text.
	s.mux.Handle("/", s.answer(s.handleNoRoute))
	// Every request passes these, the first outermost (queueWrites acts on writes only).
	s.handler = chain(s.mux, s.countHandlers, s.logRequests, s.recoverPanics,
		s.allowCORS, s.checkHost, s.requireToken, s.refuseUncleanPaths, s.readBody, s.queueWrites)
	return s
}

// handlerFunc is a route's handler: it writes its answer, or returns the error to answer.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// route is one entry of the API: a ServeMux pattern and its handler.
type route struct {
	pattern string
	handler handlerFunc
}

// routes lists the whole API. docs/openapi.json documents exactly these routes
// (TestOpenAPIDocumentsEveryRoute).
func (s *server) routes() []route {
	return []route{
		{"GET /healthz", s.handleHealth},
		{"GET /api/openapi.json", s.handleOpenAPI},
		{"GET /api/forms", s.handleListForms},
		{"POST /api/forms", s.handleCreateForm},
		{"GET /api/forms/{id}", s.handleGetForm},
		{"PUT /api/forms/{id}", s.handleUpdateForm},
		{"DELETE /api/forms/{id}", s.handleDeleteForm},
		{"POST /api/forms/{id}/responses", s.handleSubmitResponse},
		{"GET /api/forms/{id}/responses", s.handleListResponses},
		{"GET /api/forms/{id}/responses.csv", s.handleExportCSV},
		{"GET /api/responses/{responseId}/export/pdf", s.handleExportPDF},
		{"GET /api/tracker-summary/today", s.handleTodayTrackerSummary},
		{"GET /api/tracker-summaries", s.handleListTrackerSummaries},
		{"POST /api/tracker-summaries/generate", s.handleGenerateTrackerSummary},
		{"GET /api/tracker-summary", s.handleTrackerSummaryNow},
		{"GET /api/email-summaries", s.handleListEmailSummaries},
		{"POST /api/email-summaries/generate", s.handleGenerateEmailSummary},
		{"GET /api/settings/{key}", s.handleGetSetting},
		{"PUT /api/settings/{key}", s.handlePutSetting},
	}
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// answer adapts a handlerFunc to net/http: an error it returns is answered by writeError.
func (s *server) answer(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.writeError(w, r, err)
		}
	})
}

// middleware wraps a handler in one concern that every request shares.
type middleware func(http.Handler) http.Handler

// chain wraps h in mws, the first outermost.
func chain(h http.Handler, mws ...middleware) http.Handler {
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return h
}

// countHandlers counts the requests being served, so that shutdown closes the database
// only after the last one has returned.
func (s *server) countHandlers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.handlers.Add(1)
		defer s.handlers.Done()
		next.ServeHTTP(w, r)
	})
}

// logRequests writes one line per request. It gives the inner handlers a
// *statusRecorder, which recoverPanics and writeError use.
func (s *server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		aborted := true // unless next returns: a panic passes through
		defer func() {
			// client is the TCP peer: behind a reverse proxy, the proxy (DESIGN: its own log
			// names the client; a forwarded header is not trusted).
			s.log.Info("request", "client", r.RemoteAddr, "method", r.Method, "path", r.URL.Path, "status", rec.status,
				"duration", time.Since(start).Round(time.Microsecond), "aborted", aborted)
		}()
		next.ServeHTTP(rec, r)
		aborted = false
	})
}

// statusRecorder remembers the status of an answer and whether any of it was written.
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

// recoverPanics turns a panic into a JSON 500 when nothing of the answer is out yet. Once
// part of it is out, ending the connection is the only way to tell the client it is
// incomplete: net/http does so, without a log of its own, for http.ErrAbortHandler.
func (s *server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			switch v {
			case nil:
				return
			case http.ErrAbortHandler:
				panic(v) // net/http's own way to cut an answer short: passed on
			}
			s.log.Error("panic", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(v))
			if rec, ok := w.(*statusRecorder); ok && !rec.wrote {
				s.writeError(w, r, &apiError{kind: kindInternal}) // logged above: not again
				return
			}
			panic(http.ErrAbortHandler)
		}()
		next.ServeHTTP(w, r)
	})
}

// corsMaxAge is how long a browser may reuse a preflight's answer, in seconds.
const corsMaxAge = "600"

// allowCORS lets the browser front end of the original, served from another origin,
// call the API: an answer to an allowed origin names it in Access-Control-Allow-Origin,
// and a preflight (OPTIONS with Access-Control-Request-Method) of an allowed origin is
// answered here with 204, the route's methods and the request headers the API reads,
// before the token check, since browsers send preflights without credentials. A foreign
// origin gets no CORS header, and with CORS_ORIGINS unset nothing changes.
func (s *server) allowCORS(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.preflight(w, r) {
			return
		}
		next.ServeHTTP(w, r)
	})
}

// preflight sets the CORS headers of r's answer and reports whether it answered r, a
// preflight.
func (s *server) preflight(w http.ResponseWriter, r *http.Request) bool {
	if len(s.cfg.CORSOrigins) == 0 {
		return false
	}
	w.Header().Add("Vary", "Origin") // the answer depends on it, for every cache between
	origin := r.Header.Get("Origin")
	if origin == "" || !slices.ContainsFunc(s.cfg.CORSOrigins, func(o string) bool { return o == "*" || sameOrigin(o, origin) }) {
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
		return false // no such route: answered as any other request to it
	}
	h.Set("Access-Control-Allow-Methods", strings.Join(methods, ", "))
	h.Set("Access-Control-Allow-Headers", "Content-Type, Authorization")
	h.Set("Access-Control-Max-Age", corsMaxAge)
	w.WriteHeader(http.StatusNoContent)
	return true
}

// sameOrigin compares two serialized origins (scheme://host[:port]). Scheme and host are
// case-insensitive (RFC 3986 6.2.2.1; browsers send them in lower case, RFC 6454 6.2),
// so a CORS_ORIGINS entry written in capitals still matches; the rest must be equal.
func sameOrigin(a, b string) bool { return strings.EqualFold(a, b) }

// isAPI reports whether r is for the API, whose requests the token and Host rules cover.
func isAPI(r *http.Request) bool {
	return r.URL.Path == "/api" || strings.HasPrefix(r.URL.Path, "/api/")
}

// checkHost refuses API requests for a Host name the service does not know while no
// API_TOKEN guards it. A page on another site cannot read the API's answers (no CORS
// header names it), unless it makes its own name resolve to this service (DNS
// rebinding): then the browser's request carries the page's Host. Localhost, IP
// addresses and ALLOWED_HOSTS are names no such page controls. With a token, the
// browser of such a page has none to send.
func (s *server) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.APIToken == "" && isAPI(r) && !s.knownHost(r.Host) {
			s.writeError(w, r, &apiError{kind: kindForbidden, msg: "Host not allowed"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// knownHost reports whether host (with or without a port) is localhost, an IP address
// or one of ALLOWED_HOSTS.
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

// requireToken answers 401 to an API request without the configured token.
func (s *server) requireToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.APIToken != "" && isAPI(r) && !validToken(r.Header.Get("Authorization"), s.cfg.APIToken) {
			w.Header().Set("WWW-Authenticate", "Bearer") // RFC 9110: a 401 names its scheme
			s.writeError(w, r, &apiError{kind: kindUnauthorized, msg: "Unauthorized"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// validToken checks an Authorization header against "Bearer <token>"; the scheme is
// case-insensitive. The token is compared through its SHA-256 in constant time, so that
// neither its content nor its length shows in the time an answer takes.
func validToken(header, token string) bool {
	scheme, given, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	a, b := sha256.Sum256([]byte(given)), sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// refuseUncleanPaths answers 404 to a path that is not in its clean form. The mux would
// redirect /api//forms or /api/x/../forms with an HTML body; no resource lives there.
func (s *server) refuseUncleanPaths(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isCleanPath(r.URL.EscapedPath()) {
			s.writeError(w, r, errNoRoute)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// isCleanPath reports whether the escaped path p is already in the form path.Clean
// gives it, ignoring a trailing slash: no empty, "." or ".." segments. An escaped
// slash (%2F) is data inside a segment, not a separator.
func isCleanPath(p string) bool {
	clean := path.Clean(p)
	if strings.HasSuffix(p, "/") && clean != "/" {
		clean += "/"
	}
	return clean == p
}

// readBody reads every request body before its route, as the original's body parser
// did: one that is not application/json (415; a cross-site form cannot send that type
// without a preflight), over maxBodyBytes (413) or not JSON (400) is refused on every
// route, those that read none included, and changes nothing. The body's bytes count
// against s.uploads from before the first is read until the handler returns. The checked
// bytes are put back as the request's body, which the handler decodes itself.
func (s *server) readBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength == 0 { // no body; -1, a body of unknown length, is read
			next.ServeHTTP(w, r)
			return
		}
		body, release, err := s.checkedBody(w, r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		defer release()
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// checkedBody reads and checks r's body for readBody; release gives its room back.
func (s *server) checkedBody(w http.ResponseWriter, r *http.Request) (body []byte, release func(), err error) {
	if r.ContentLength > maxBodyBytes {
		return nil, nil, errBodyTooLarge // refused from its announced length, unread
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		return nil, nil, &apiError{kind: kindUnsupportedMediaType, msg: "Content-Type must be application/json"}
	}
	release = func() {}
	if r.ContentLength < 0 || r.ContentLength > smallBodyBytes {
		size := int64(maxBodyBytes) // of unknown length: as much as it may be
		if r.ContentLength > 0 {
			size = r.ContentLength
		}
		if release, err = s.uploads.acquire(r.Context(), size); err != nil {
			return nil, nil, err
		}
	}
	body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	var maxErr *http.MaxBytesError
	switch {
	case errors.As(err, &maxErr):
		err = errBodyTooLarge
	case err != nil:
		err = errInvalidJSON
	case len(bytes.TrimSpace(body)) > 0 && !json.Valid(body):
		err = errInvalidJSON
	}
	if err != nil {
		release()
		return nil, nil, err
	}
	return body, release, nil
}

// queueWrites lets writeSlots requests that change data (those of a POST, PUT or DELETE
// route) run at once, and queues writeQueue more for at most writeWait each; past either
// bound it answers 503. The database has one write connection, which serves writers in
// turn: without this queue, every writer the connection cap lets in would wait there,
// with no bound of its own on their number or their wait. It comes after readBody, so
// that a slow upload holds no write slot (the hostile suite's stalled uploads show it).
// The summary jobs write outside it: one job of each kind runs at a time.
func (s *server) queueWrites(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			next.ServeHTTP(w, r)
			return
		}
		if _, pattern := s.mux.Handler(r); pattern == "/" {
			next.ServeHTTP(w, r) // no such route: 404 or 405, whatever the queue
			return
		}
		release, err := s.writes.acquire(r.Context(), 1)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		defer release()
		next.ServeHTTP(w, r)
	})
}

// routeMethods lists the methods the route of r's path answers; none when no route
// serves the path.
func (s *server) routeMethods(r *http.Request) []string {
	var methods []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete} {
		probe := *r
		probe.Method = m
		if _, pattern := s.mux.Handler(&probe); pattern != "/" && pattern != "" {
			methods = append(methods, m)
		}
	}
	return methods
}

// handleNoRoute answers what no pattern matched: 405 with Allow when the path exists under
// another method, else 404. The mux would answer both in plain text; the API speaks JSON.
func (s *server) handleNoRoute(w http.ResponseWriter, r *http.Request) error {
	if allow := s.routeMethods(r); len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		return &apiError{kind: kindMethodNotAllowed, msg: "Method not allowed"}
	}
	return errNoRoute
}

// limitListener accepts at most cap(slots) connections at once. One more is answered
// 503 and closed at once rather than left in the kernel's queue, where a crowd of idle
// connections would hold up every client behind it.
type limitListener struct {
	net.Listener
	slots chan struct{}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &limitedConn{Conn: c, release: func() { <-l.slots }}, nil
		default:
			refuseConnection(c)
		}
	}
}

// refuseConnection answers a connection past the cap, before any request is read,
// with what writeError would write for kindUnavailable, and closes it. No handler runs
// for it: there is no request yet.
func refuseConnection(c net.Conn) {
	body := `{"error":"Too many connections"}` + "\n"
	c.SetWriteDeadline(time.Now().Add(time.Second))
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: application/json; charset=utf-8\r\nRetry-After: 1\r\n"+
		"Connection: close\r\nContent-Length: %d\r\n\r\n%s", errorStatus[kindUnavailable],
		http.StatusText(errorStatus[kindUnavailable]), len(body), body)
	c.Close()
}

// limitedConn gives its listener slot back when closed, once.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}

// The gates bound what the service holds at once (README, Limits): request bodies being
// read (s.uploads), answers not yet read by their clients (s.answers), PDFs and list
// pages being built (s.heavy), writes (s.writes). A first read may take them as given.
// Their tests, in limits_test.go: TestGate, TestGateWaiterLeavesMidQueue,
// TestHeavyQueueBounded, TestAnswersAndUploadsBounded, TestWritesQueued,
// TestChunkedBodyCountsAsLargest; under attack, hostile_test.go.

// gate admits work while the units in use (slots, bytes) stay within its capacity, first
// come first served. A request that finds maxQueue others waiting, or waits longer than
// maxWait, is refused with errBusy: a crowd gets a quick 503 instead of an endless queue.
type gate struct {
	capacity int64
	maxQueue int
	maxWait  time.Duration

	mu    sync.Mutex
	used  int64
	queue []*gateWaiter
}

type gateWaiter struct {
	n     int64
	ready chan struct{} // closed when admitted
}

func newGate(capacity int64, maxQueue int, maxWait time.Duration) *gate {
	return &gate{capacity: capacity, maxQueue: maxQueue, maxWait: maxWait}
}

// acquire waits until n units are free (n above the capacity counts as all of it) and
// returns the function that frees them. It fails with errBusy past the queue's length
// or its wait, and with the context's error when the client leaves while it waits.
func (g *gate) acquire(ctx context.Context, n int64) (release func(), err error) {
	n = min(n, g.capacity)
	g.mu.Lock()
	if len(g.queue) == 0 && g.used+n <= g.capacity {
		g.used += n
		g.mu.Unlock()
		return g.releaser(n), nil
	}
	if len(g.queue) >= g.maxQueue {
		g.mu.Unlock()
		return nil, errBusy
	}
	w := &gateWaiter{n: n, ready: make(chan struct{})}
	g.queue = append(g.queue, w)
	g.mu.Unlock()

	timer := time.NewTimer(g.maxWait)
	defer timer.Stop()
	select {
	case <-w.ready:
		return g.releaser(n), nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-timer.C:
		err = errBusy
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-w.ready: // admitted as it gave up: give the units back
		g.used -= n
	default:
		g.queue = slices.DeleteFunc(g.queue, func(q *gateWaiter) bool { return q == w })
	}
	g.admit() // the next in line may fit now
	return nil, err
}

func (g *gate) releaser(n int64) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			g.used -= n
			g.admit()
		})
	}
}

// admit lets waiters in, in order, while the first fits. The caller holds g.mu.
func (g *gate) admit() {
	for len(g.queue) > 0 && g.used+g.queue[0].n <= g.capacity {
		w := g.queue[0]
		g.queue = g.queue[1:]
		g.used += w.n
		close(w.ready)
	}
}

// openAPI is docs/openapi.json, the API's description, written by hand so that it reads
// as documentation, and kept true by tests against the route table and real answers.
//
//go:embed docs/openapi.json
var openAPI []byte

func (s *server) handleOpenAPI(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_, err := w.Write(openAPI)
	return writeFailed(err)
}

func (s *server) handleHealth(w http.ResponseWriter, r *http.Request) error {
	if err := s.store.Ping(r.Context()); err != nil {
		s.log.Error("health check", "err", err)
		return &apiError{kind: kindUnavailable, msg: "Database unavailable"}
	}
	return s.writeJSON(w, r, http.StatusOK, map[string]string{"status": "ok"})
}

// writeJSON sends v as the JSON answer with status. The answer is encoded whole before
// its header goes out, so that an encoding failure is still a clean 500; an answer
// larger than smallAnswerBytes first takes its room in s.answers, kept until the
// client has it.
func (s *server) writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) error {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		return fmt.Errorf("encode answer: %w", err)
	}
	release, err := s.holdAnswer(r.Context(), buf.Len())
	if err != nil {
		return err
	}
	defer release()
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, err = w.Write(buf.Bytes())
	return writeFailed(err)
}

// holdAnswer takes room in s.answers for an answer of n bytes about to be written,
// until release: the one place where answers in memory are counted. An answer of at
// most smallAnswerBytes takes none (maxConnections bounds those).
func (s *server) holdAnswer(ctx context.Context, n int) (release func(), err error) {
	if n <= smallAnswerBytes {
		return func() {}, nil
	}
	return s.answers.acquire(ctx, int64(n))
}

// pagedWriter sends an answer a page at a time: each page is built in buf, then takes
// its room in s.answers until the client has it, as writeJSON's answers do. The status
// and header go out with the first page, so that an error before it is still a clean
// JSON error.
type pagedWriter struct {
	s       *server
	w       http.ResponseWriter
	r       *http.Request
	header  http.Header // sent with the first page; JSON unless changed
	buf     bytes.Buffer
	started bool
	items   int // written by arrayItem
}

// arrayItem adds v, encoded, as the next item of the JSON array the answer is;
// endArray closes the array.
func (p *pagedWriter) arrayItem(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode list item %d: %w", p.items, err)
	}
	if p.items == 0 {
		p.buf.WriteByte('[')
	} else {
		p.buf.WriteByte(',')
	}
	p.items++
	p.buf.Write(b)
	return nil
}

// endArray closes the JSON array of arrayItem's items, an empty one too, and sends the
// rest of the answer.
func (p *pagedWriter) endArray() error {
	if p.items == 0 {
		p.buf.WriteByte('[')
	}
	p.buf.WriteString("]\n")
	return p.flush()
}

func (s *server) newPagedWriter(w http.ResponseWriter, r *http.Request) *pagedWriter {
	h := http.Header{}
	h.Set("Content-Type", "application/json; charset=utf-8")
	return &pagedWriter{s: s, w: w, r: r, header: h}
}

// flush sends what buf holds and empties it.
func (p *pagedWriter) flush() error {
	release, err := p.s.holdAnswer(p.r.Context(), p.buf.Len())
	if err != nil {
		return err
	}
	defer release()
	if !p.started {
		p.started = true
		maps.Copy(p.w.Header(), p.header)
		p.w.WriteHeader(http.StatusOK)
	}
	_, err = p.w.Write(p.buf.Bytes())
	p.buf.Reset()
	return writeFailed(err)
}

// writeFailed logs nothing and answers nothing for an error writing an answer whose
// header is out: the client sees a cut answer. It gives the error to the request log.
func writeFailed(err error) error {
	if err != nil {
		return &apiError{kind: kindClientGone, err: err}
	}
	return nil
}

// retrySeconds is a wait in whole seconds, at least 1: the value of a Retry-After header.
func retrySeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// errorKind says how the API answers an error; errorStatus maps each to its status.
type errorKind int

const (
	kindInternal             errorKind = iota // a failure of ours: logged, answered without its details
	kindInvalid                               // the request breaks a rule: 400
	kindUnauthorized                          // no valid token: 401
	kindForbidden                             // a Host the service does not serve: 403
	kindNotFound                              // no such record or route: 404
	kindMethodNotAllowed                      // 405, with Allow
	kindTooLarge                              // 413
	kindUnsupportedMediaType                  // 415
	kindRejected                              // 500 with its message: a form rule (SPEC.md §7), a PDF past its pages, missing configuration
	kindUnavailable                           // busy or down: 503, with Retry-After
	kindClientGone                            // the client left: nothing is sent, 499 is logged
)

// errorStatus is the one table from error kinds to statuses.
var errorStatus = map[errorKind]int{
	kindInternal:             http.StatusInternalServerError,
	kindInvalid:              http.StatusBadRequest,
	kindUnauthorized:         http.StatusUnauthorized,
	kindForbidden:            http.StatusForbidden,
	kindNotFound:             http.StatusNotFound,
	kindMethodNotAllowed:     http.StatusMethodNotAllowed,
	kindTooLarge:             http.StatusRequestEntityTooLarge,
	kindUnsupportedMediaType: http.StatusUnsupportedMediaType,
	kindRejected:             http.StatusInternalServerError,
	kindUnavailable:          http.StatusServiceUnavailable,
	kindClientGone:           statusClientGone,
}

// statusClientGone is logged for a request whose client left before its answer, as
// nginx logs it; it is never sent.
const statusClientGone = 499

// apiError is an error the client is told about: kind chooses the status, msg is the
// message it reads. err, when set, is the cause, for the log only.
type apiError struct {
	kind   errorKind
	msg    string
	member string // the message's JSON member; "error" when empty
	err    error
	// retryAfter is when a refused request (kindUnavailable) may come again; a second
	// when zero.
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
func invalid(msg string) error { return &apiError{kind: kindInvalid, msg: msg} }

// The errors the middleware and most handlers answer.
var (
	errNoRoute      = &apiError{kind: kindNotFound, msg: "Not found"}
	errInvalidJSON  = invalid("Invalid JSON body")
	errBodyTooLarge = &apiError{kind: kindTooLarge, msg: "Request body too large"}
	errBusy         = &apiError{kind: kindUnavailable, msg: "Server busy, retry later"}
)

// errNotFound is the store's error for a record an operation is on that does not exist.
// Like ruleError below it is an error of the domain, knowing nothing of HTTP; writeError
// alone gives it its status. Its message is docs/SPEC.md §7's: an update, delete or
// submit answers "<context>: Record not found".
var errNotFound = errors.New("Record not found")

// ruleError is a form rule broken (a field's label or type, a name's length), found in
// the store's transaction that writes the form, so that a bad last field undoes the rest.
// docs/SPEC.md §7 answers it with 500 and its message.
type ruleError struct{ msg string }

func (e *ruleError) Error() string { return e.msg }

// missing is the answer of a read whose record does not exist, in docs/SPEC.md §7's words
// for it (msg: "Form not found"); any other error is passed on with its operation, as
// during does.
func missing(op string, err error, msg string) error {
	if errors.Is(err, errNotFound) {
		return &apiError{kind: kindNotFound, msg: msg}
	}
	return during(op, err)
}

// opError names the operation an error happened in: docs/SPEC.md §7's <context>, such
// as "update form 7", which the answers of missing records and failures carry.
type opError struct {
	op  string
	err error
}

func (e *opError) Error() string { return e.op + ": " + e.err.Error() }
func (e *opError) Unwrap() error { return e.err }

// during wraps err, when not nil, with the operation it happened in.
func during(op string, err error) error {
	if err == nil {
		return nil
	}
	return &opError{op: op, err: err}
}

// writeError answers err: the one place where errors become statuses and messages
// (classify, then answerText). An error that is no *apiError or error of the domain is a
// failure of ours: the log gets it whole, the client docs/SPEC.md §7's "Failed to
// <context>: …" without addresses, paths or causes.
func (s *server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	ae := s.classify(r, err)
	rec, _ := w.(*statusRecorder)
	switch {
	case ae.kind == kindClientGone:
		// Nobody reads an answer; the log says so rather than showing a 200.
		s.log.Info("client gone", "method", r.Method, "path", r.URL.Path, "err", ae.err)
		if rec != nil {
			rec.status = statusClientGone
		}
		return
	case rec != nil && rec.wrote:
		// Part of the answer is out (a list written page by page): the client sees it
		// cut, which is all docs/SPEC.md asks, and the log says why.
		s.log.Error("answer cut", "method", r.Method, "path", r.URL.Path, "err", err)
		return
	case ae.kind == kindUnavailable:
		w.Header().Set("Retry-After", strconv.Itoa(retrySeconds(ae.retryAfter)))
	}
	var op string // docs/SPEC.md §7's <context>, when err names one
	var oe *opError
	if errors.As(err, &oe) {
		op = oe.op
	}
	body, _ := json.Marshal(map[string]string{cmp.Or(ae.member, "error"): answerText(ae, op)}) // strings always encode
	status, ok := errorStatus[ae.kind]
	if !ok {
		status = http.StatusInternalServerError // a kind missing from the table (TestErrorTableComplete)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

// classify is the answer err gets: an *apiError as it is, the domain's errors by their
// kind, a client that left as such, and anything else as a failure of ours, which it logs
// whole here (the answer will not say what it was).
func (s *server) classify(r *http.Request, err error) *apiError {
	var ae *apiError
	var rule *ruleError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, errNotFound):
		return &apiError{kind: kindNotFound, msg: errNotFound.Error()}
	case errors.As(err, &rule):
		return &apiError{kind: kindRejected, msg: rule.msg}
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		return &apiError{kind: kindClientGone, err: err}
	}
	s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	return &apiError{kind: kindInternal, msg: "internal error"}
}

// answerText is the message the client of ae reads, with op the operation it happened in
// (docs/SPEC.md §7): "Failed to update form 7: …" for a failure, "update form 7: Record
// not found" for a missing record.
func answerText(ae *apiError, op string) string {
	switch {
	case ae.kind == kindInternal && op == "":
		return "Internal server error"
	case (ae.kind == kindInternal || ae.kind == kindRejected) && op != "":
		return "Failed to " + op + ": " + ae.msg
	case ae.kind == kindNotFound && op != "":
		return op + ": " + ae.msg
	}
	return ae.msg
}

// readJSON decodes the request's body, which readBody has checked (JSON, at most
// maxBodyBytes), into a T, a struct, by its fields' json tags (decodeMembers), and checks
// it with its Valid method where T has one. No body is the zero T, as the original's
// body parser had {} for it.
func readJSON[T any](r *http.Request) (T, error) {
	var v T
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return v, err
	}
	if len(bytes.TrimSpace(body)) > 0 {
		if err := decodeMembers(reflect.ValueOf(&v).Elem(), body, ""); err != nil {
			return v, err
		}
	}
	if valid, ok := any(&v).(interface{ Valid() error }); ok { // either receiver
		return v, valid.Valid()
	}
	return v, nil
}

// decodeMembers reads raw, a JSON object, into v, a struct, member by member as the
// original read them (req.body.title): by exact name, where Go's encoding/json would take
// {"Title": ...} for title, and of a name given twice the last. A slice of structs is read
// element by element, so that an error names its path (categories[0].fields[2].label); a
// member of the wrong JSON kind is a 400 that names it. path is raw's ("" for the body).
// A field of another kind is decoded by encoding/json, which would match the members of
// a nested struct case-insensitively: the bodies have none.
func decodeMembers(v reflect.Value, raw json.RawMessage, path string) error {
	object, err := decodeObject(raw, path)
	if err != nil {
		return err
	}
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		member, ok := object[name]
		if name == "" || !ok {
			continue
		}
		if path != "" {
			name = path + "." + name
		}
		field := v.Field(i)
		if field.Kind() == reflect.Slice && field.Type().Elem().Kind() == reflect.Struct {
			var items []json.RawMessage
			if json.Unmarshal(member, &items) != nil {
				return invalid(fmt.Sprintf("Invalid JSON body: %s must be an array", name))
			}
			field.Set(reflect.MakeSlice(field.Type(), len(items), len(items)))
			for j, item := range items {
				if err := decodeMembers(field.Index(j), item, fmt.Sprintf("%s[%d]", name, j)); err != nil {
					return err
				}
			}
			continue
		}
		if json.Unmarshal(member, field.Addr().Interface()) != nil {
			return invalid(fmt.Sprintf("Invalid JSON body: %s must be %s", name, jsonKind(field.Type())))
		}
	}
	return nil
}

// jsonObject is a JSON object's members by exact name; of a name given twice the last
// counts, as in JavaScript.
type jsonObject map[string]json.RawMessage

// decodeObject reads raw, valid JSON, as an object; null is an object without members,
// and so is an array as the whole body. path names raw in error messages ("" for the
// whole body).
func decodeObject(raw json.RawMessage, path string) (jsonObject, error) {
	if path == "" && bytes.HasPrefix(bytes.TrimSpace(raw), []byte("[")) {
		// The original's body parser took a JSON array as the body, whose members
		// (req.body.title) are all undefined; the endpoint's own check answers.
		return jsonObject{}, nil
	}
	var o jsonObject
	if err := json.Unmarshal(raw, &o); err != nil {
		if path == "" {
			return nil, invalid("Invalid JSON body: expected an object")
		}
		return nil, invalid(fmt.Sprintf("Invalid JSON body: %s must be an object", path))
	}
	return o, nil
}

// jsonKind names the JSON kind a Go type decodes from, for error messages.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Bool:
		return "a boolean"
	default:
		return "a number"
	}
}

// parseID reads an id in a path or a key of values: the whole text base-10 digits, as
// docs/DESIGN.md wants it; signs, spaces and fractions are not ids. Digits beyond int64
// are an id all the same, of no row, as they were to the original's parseInt: they read
// as 0, which no row has either (AUTOINCREMENT starts at 1), so the endpoint answers
// its 404 as for any other missing id.
func parseID(s string) (int64, bool) {
	n, ok := parseDigits(s)
	if n < 0 {
		n = 0
	}
	return n, ok
}

// parseDigits reads s when it is one or more ASCII digits and nothing else; digits
// beyond int64 read as -1.
func parseDigits(s string) (int64, bool) {
	if !isDigits(s) {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return -1, true // out of range, the one error digits can give
	}
	return n, true
}

// isDigits reports whether s is one or more ASCII digits and nothing else.
func isDigits(s string) bool {
	return s != "" && strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }) < 0
}
