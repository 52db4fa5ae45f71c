// Command formsvc is a JSON HTTP service for forms, their responses (with a PDF export),
// daily generated summaries of issue-tracker activity and e-mail, and string settings.
// docs/SPEC.md is its contract and docs/DESIGN.md its decisions; README.md says how to run it.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
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
	CORSOrigins        []string      // origins allowed to call the API from a browser; "*" is any
	PDFFontDir         string        // folders (":"-separated) searched first for fallback fonts
	HeaderTimeout      time.Duration // how long a client may take to send its headers
	RequestGrace       time.Duration // how long requests in flight get at shutdown
	JobGrace           time.Duration // how long cancelled background jobs (and handlers past RequestGrace) get at shutdown
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
		CORSOrigins:        splitList(getenv("CORS_ORIGINS"), ","),
		PDFFontDir:         getenv("PDF_FONT_DIR"),
		HeaderTimeout:      5 * time.Second,
		RequestGrace:       10 * time.Second,
		JobGrace:           5 * time.Second,
		OutboundTimeout:    60 * time.Second,
		OutboundRetryDelay: 500 * time.Millisecond,
	}
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
	if len(args) > 0 {
		return fmt.Errorf("usage: formsvc takes no arguments; configure it with environment variables (see README.md)")
	}
	cfg := loadConfig(getenv)
	if err := checkTZ(getenv("TZ")); err != nil {
		return fmt.Errorf("TZ: %w", err)
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))

	store, err := OpenStore(ctx, cfg.DatabasePath, time.Now)
	if err != nil {
		return err
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
	srv := newServer(cfg, store, log, time.Now, &http.Client{})
	httpServer := newHTTPServer(cfg, srv, log)
	fmt.Fprintf(stdout, "listening on %s\n", ln.Addr())
	log.Info("listening", "addr", ln.Addr().String(), "database", cfg.DatabasePath)
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

// maxBodyBytes bounds every request body (docs/DESIGN.md: 413 above 1 MiB).
const maxBodyBytes = 1 << 20

// server holds the dependencies of every handler; tests build their own.
type server struct {
	cfg   config
	store *Store
	log   *slog.Logger
	now   func() time.Time
	mux   *http.ServeMux
	// client makes the outbound calls to the tracker and the model.
	client *http.Client
	jobs   *summaryJobs
	// handlers counts the requests being served, so that shutdown closes the database
	// only after the last one has returned.
	handlers sync.WaitGroup
	// heavySlots bounds the answers being built at once that cost tens of megabytes
	// each (a PDF export, a response list, the rows of a CSV export; see acquireHeavy).
	heavySlots chan struct{}
	// fonts are the PDF's fallback fonts, found once here rather than per export.
	fonts *fontIndex
}

func newServer(cfg config, store *Store, log *slog.Logger, now func() time.Time, client *http.Client) *server {
	s := &server{
		cfg:        cfg,
		store:      store,
		log:        log,
		now:        now,
		mux:        http.NewServeMux(),
		client:     client,
		jobs:       newSummaryJobs(),
		heavySlots: make(chan struct{}, runtime.GOMAXPROCS(0)),
		fonts:      newFontIndex(fontDirs(cfg.PDFFontDir)),
	}
	for _, rt := range s.routes() {
		s.mux.HandleFunc(rt.pattern, rt.handler)
	}
	// Whatever no pattern matches: JSON 404 or 405 rather than the mux's plain text.
	s.mux.HandleFunc("/", s.handleNoRoute)
	return s
}

// route is one entry of the API: a ServeMux pattern and its handler.
type route struct {
	pattern string
	handler http.HandlerFunc
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

// ServeHTTP runs every request through logging, recovery and the token check.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.handlers.Add(1)
	defer s.handlers.Done()
	start := time.Now()
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	defer func() {
		v := recover()
		if v != nil && v != http.ErrAbortHandler {
			s.log.Error("panic", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(v))
			if !rec.wrote {
				writeError(rec, http.StatusInternalServerError, "Internal server error")
				v = nil
			}
		}
		s.log.Info("request", "method", r.Method, "path", r.URL.Path, "status", rec.status,
			"duration", time.Since(start).Round(time.Microsecond), "aborted", v != nil)
		if v != nil {
			// Part of the answer may be out: ending the connection is the only way to
			// tell the client it is incomplete. net/http does so, without a log of its
			// own, for this value.
			panic(http.ErrAbortHandler)
		}
	}()
	if s.cors(rec, r) {
		return // a preflight, answered
	}
	if s.cfg.APIToken != "" && (r.URL.Path == "/api" || strings.HasPrefix(r.URL.Path, "/api/")) &&
		!validToken(r.Header.Get("Authorization"), s.cfg.APIToken) {
		rec.Header().Set("WWW-Authenticate", "Bearer") // RFC 9110: a 401 names its scheme
		s.fail(rec, r, "", &requestError{status: http.StatusUnauthorized, msg: "Unauthorized"})
		return
	}
	if !isCleanPath(r.URL.EscapedPath()) {
		// The mux would redirect /api//forms or /api/x/../forms with an HTML body; no
		// resource lives at a path that is not in its clean form.
		s.fail(rec, r, "", &requestError{status: http.StatusNotFound, msg: "Not found"})
		return
	}
	if r.ContentLength != 0 { // -1: a body of unknown length
		// Every body is checked before its route, as the original's body parser did:
		// one that is not JSON or is over 1 MiB is refused on every route, those that
		// read none included, and changes nothing. The handlers that read the body get
		// the checked bytes.
		body, err := readJSON(rec, r)
		if err != nil {
			s.fail(rec, r, "", err)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	s.mux.ServeHTTP(rec, r)
}

// corsMaxAge is how long a browser may reuse a preflight's answer, in seconds.
const corsMaxAge = "600"

// cors lets the browser front end of the original, served from another origin, call the
// API: an answer to an allowed origin names it in Access-Control-Allow-Origin, and a
// preflight (OPTIONS with Access-Control-Request-Method) of an allowed origin is
// answered here with 204, the route's methods and the request headers the API reads,
// before the token check, since browsers send preflights without credentials. A foreign
// origin gets no CORS header, and with CORS_ORIGINS unset nothing changes. It reports
// whether it answered the request.
func (s *server) cors(w http.ResponseWriter, r *http.Request) bool {
	if len(s.cfg.CORSOrigins) == 0 {
		return false
	}
	w.Header().Add("Vary", "Origin") // the answer depends on it, for every cache between
	origin := r.Header.Get("Origin")
	if origin == "" || !(slices.Contains(s.cfg.CORSOrigins, "*") || slices.Contains(s.cfg.CORSOrigins, origin)) {
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

// statusClientGone is logged for a request whose client left before its answer, as
// nginx logs it; it is never sent.
const statusClientGone = 499

// statusRecorder remembers the status for the request log.
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
func (s *server) handleNoRoute(w http.ResponseWriter, r *http.Request) {
	if allow := s.routeMethods(r); len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		s.fail(w, r, "", &requestError{status: http.StatusMethodNotAllowed, msg: "Method not allowed"})
		return
	}
	s.fail(w, r, "", &requestError{status: http.StatusNotFound, msg: "Not found"})
}

// acquireHeavy waits for one of heavySlots, of which there are as many as cores. The
// answers it guards are CPU-bound, so more of them at once only add memory: 32 clients
// listing 1,000 responses of 50 values took the process to 235 MiB without it (README,
// Performance). A slot is held while the answer's data is read and, but for the CSV,
// which is encoded row by row as it is written, while the answer is built; never while
// a client reads. It fails with the context's error when the client leaves while it waits.
func (s *server) acquireHeavy(ctx context.Context) (release func(), err error) {
	select {
	case s.heavySlots <- struct{}{}:
		return func() { <-s.heavySlots }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// openAPI is docs/openapi.json, the API's description, written by hand so that it reads
// as documentation, and kept true by tests against the route table and real answers.
//
//go:embed docs/openapi.json
var openAPI []byte

func (s *server) handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Write(openAPI)
}

func (s *server) handleHealth(w http.ResponseWriter, r *http.Request) {
	if err := s.store.Ping(r.Context()); err != nil {
		s.log.Error("health check", "err", err)
		s.fail(w, r, "", &requestError{status: http.StatusServiceUnavailable, msg: "Database unavailable"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// writeJSON sends v as the JSON answer. encoding/json's Encoder encodes the whole value
// into its own buffer and writes it with one Write, so the header goes out only once the
// encoding has succeeded, and an encoding failure is still a clean 500.
func writeJSON(w http.ResponseWriter, status int, v any) {
	out := &headerOnWrite{w: w, status: status}
	if err := json.NewEncoder(out).Encode(v); err != nil && !out.wrote {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "Failed to encode answer"})
	}
}

// headerOnWrite sends the JSON answer's header just before the first byte of its body.
type headerOnWrite struct {
	w      http.ResponseWriter
	status int
	wrote  bool
}

func (h *headerOnWrite) Write(p []byte) (int, error) {
	if !h.wrote {
		h.wrote = true
		h.w.Header().Set("Content-Type", "application/json; charset=utf-8")
		h.w.WriteHeader(h.status)
	}
	return h.w.Write(p)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// requestError is an error answered with its exact status and message. The message is
// sent as {"error": msg}, or as {"message": msg} where member is "message" (only the 404 of
// GET /api/tracker-summary/today, docs/SPEC.md §7).
type requestError struct {
	status int
	msg    string
	member string // "error" when empty
}

func (e *requestError) Error() string { return e.msg }

func badRequest(msg string) error { return &requestError{status: http.StatusBadRequest, msg: msg} }

// notFoundAs gives a missing record the answer of a read endpoint ("Form not found",
// "Response not found"), where update, delete and submit answer "<context>: Record not found".
func notFoundAs(msg string, err error) error {
	if errors.Is(err, errNotFound) {
		return &requestError{status: http.StatusNotFound, msg: msg}
	}
	return err
}

// fail answers err for the operation op, one of docs/SPEC.md §7's contexts. It is
// the one place where errors become statuses.
func (s *server) fail(w http.ResponseWriter, r *http.Request, op string, err error) {
	var re *requestError
	var ve *validationError
	var ce *configError
	switch {
	case errors.As(err, &re) && re.member != "":
		writeJSON(w, re.status, map[string]string{re.member: re.msg})
	case errors.As(err, &re):
		writeError(w, re.status, re.msg)
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		// The client left (while waiting for a PDF slot, say): nobody reads an answer, and
		// the log says so rather than showing a 200.
		s.log.Info("client gone", "method", r.Method, "path", r.URL.Path)
		if rec, ok := w.(*statusRecorder); ok {
			rec.status = statusClientGone
		}
	case errors.Is(err, errNotFound):
		writeError(w, http.StatusNotFound, op+": Record not found")
	case errors.As(err, &ce):
		// The earlier variant's on-demand summary answers missing configuration bare.
		writeError(w, http.StatusInternalServerError, ce.msg)
	case errors.As(err, &ve):
		writeError(w, http.StatusInternalServerError, "Failed to "+op+": "+ve.msg)
	default:
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(w, http.StatusInternalServerError, "Failed to "+op+": "+err.Error())
	}
}

// readJSON reads a request body of at most maxBodyBytes that must be JSON. An empty body
// counts as {}, as the original's body parser had it. Errors are *requestError: 413 over
// maxBodyBytes (refused from Content-Length before reading when the client announces
// it), 400 otherwise; either way nothing has been changed.
func readJSON(w http.ResponseWriter, r *http.Request) (json.RawMessage, error) {
	tooLarge := &requestError{status: http.StatusRequestEntityTooLarge, msg: "Request body too large"}
	if r.ContentLength > maxBodyBytes {
		return nil, tooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	var maxErr *http.MaxBytesError
	if errors.As(err, &maxErr) {
		return nil, tooLarge
	}
	if err != nil {
		return nil, badRequest("Invalid JSON body")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return json.RawMessage("{}"), nil
	}
	if !json.Valid(body) {
		return nil, badRequest("Invalid JSON body")
	}
	return body, nil
}

// readObject reads the request body, which ServeHTTP has checked with readJSON, as a
// JSON object (see decodeObject). No body is {}.
func readObject(r *http.Request) (jsonObject, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, badRequest("Invalid JSON body")
	}
	if len(body) == 0 {
		return jsonObject{}, nil
	}
	return decodeObject(body, "")
}

// jsonObject is a JSON object's members by exact name. The original read members as
// JavaScript does (req.body.title): names match exactly, and of a name given twice the
// last counts. Go's encoding/json would match struct fields regardless of case
// ({"Title": …} as title), so request bodies are read through jsonObject instead.
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
			return nil, badRequest("Invalid JSON body: expected an object")
		}
		return nil, badRequest(fmt.Sprintf("Invalid JSON body: %s must be an object", path))
	}
	return o, nil
}

// get decodes member name into dst, a pointer; an absent member leaves dst as it is, and
// null leaves it at its zero value. A member of the wrong JSON kind is a 400 that names it.
func (o jsonObject) get(name, path string, dst any) error {
	raw, ok := o[name]
	if !ok {
		return nil
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		if path != "" {
			name = path + "." + name
		}
		return badRequest(fmt.Sprintf("Invalid JSON body: %s must be %s", name, jsonKind(reflect.TypeOf(dst))))
	}
	return nil
}

// firstError returns the first non-nil error. Go evaluates every argument before the
// call, so each step runs even after one failed: it is for steps that are independent,
// such as decoding members into separate variables.
func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
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
	if !isDigits(s) {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, true // out of range, the one error digits can give
	}
	return n, true
}

// isDigits reports whether s is one or more ASCII digits and nothing else.
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
