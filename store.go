package main

import (
	_ "embed"

	"context"
	"database/sql"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	_ "github.com/mattn/go-sqlite3"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

//go:embed schema.sql
var schemaSQL string

// errNotFound is returned by store methods when the record they operate on does not exist.
var errNotFound = errors.New("record not found")

// validationError is a rule of the form model that the input broke. SPEC.md answers these
// with 500 and the message, so it is a type of its own rather than a 400 request error.
type validationError struct{ msg string }

func (e *validationError) Error() string { return e.msg }

// fieldTypes are the five field types SPEC.md allows, mirrored by the CHECK in schema.sql.
var fieldTypes = map[string]bool{"text": true, "number": true, "date": true, "textarea": true, "boolean": true}

// Store is the SQLite database behind the service.
//
// It holds two pools on the same file. All writes go through write, which has exactly one
// connection: SQLite allows one writer at a time anyway, and queueing writers in
// database/sql's pool (first come, first served) instead of in SQLite's busy handler means a
// writer never sees "database is locked" and never sleeps in a retry loop. Reads go through
// read, with several connections: in WAL mode readers see the last commit and never wait for
// the writer.
type Store struct {
	write  *sql.DB
	read   *sql.DB
	now    func() time.Time
	fields fieldSets

	// Submits are written in batches: see CreateResponse.
	submits     chan *pendingSubmit
	submitsDone chan struct{} // closed when the batch writer has ended
	closeMu     sync.RWMutex  // held for writing only by Close, which ends submits
	closed      bool
}

// OpenStore opens (creating when absent) the SQLite file at path and applies the schema.
func OpenStore(ctx context.Context, path string, now func() time.Time) (*Store, error) {
	if strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("open database: path %q must not contain '?' or '#'", path)
	}
	// synchronous=NORMAL in WAL mode keeps every commit across a crash of the process
	// (kill -9): the commit is in the WAL file before the call returns. Only a power loss
	// may lose the last commits, which is the usual trade for not fsyncing every commit.
	// busy_timeout still matters for the rare cross-pool case, a checkpoint against a reader.
	params := url.Values{
		"_journal_mode": {"WAL"},
		"_synchronous":  {"NORMAL"},
		"_foreign_keys": {"on"},
		"_busy_timeout": {"10000"},
	}
	write, err := sql.Open("sqlite3", path+"?"+params.Encode()+"&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	write.SetMaxOpenConns(1)
	// Each connection keeps its own page cache (2 MB by default); the readers get 1 MB
	// each, as the operating system caches the file for them all anyway.
	read, err := sql.Open("sqlite3", path+"?"+params.Encode()+"&_cache_size=-1024")
	if err != nil {
		write.Close()
		return nil, fmt.Errorf("open database: %w", err)
	}
	// The response list streams while it reads, so a slow client holds a read connection
	// until the write timeout; a few more than the cores keep other reads moving.
	readers := max(8, runtime.NumCPU()*2)
	read.SetMaxOpenConns(readers)
	read.SetMaxIdleConns(readers)

	s := &Store{write: write, read: read, now: now,
		submits: make(chan *pendingSubmit), submitsDone: make(chan struct{})}
	go s.writeSubmits()
	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) migrate(ctx context.Context) error {
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("apply schema: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, schemaSQL); err != nil {
		return fmt.Errorf("apply schema: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("apply schema: %w", err)
	}
	return nil
}

// Close closes both pools.
func (s *Store) Close() error {
	s.closeMu.Lock()
	if !s.closed {
		s.closed = true
		close(s.submits)
	}
	s.closeMu.Unlock()
	<-s.submitsDone // every submit handed over is answered before the database closes
	return errors.Join(s.read.Close(), s.write.Close())
}

// Ping checks that the database answers a query.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	return s.read.QueryRowContext(ctx, "SELECT 1").Scan(&one)
}

// timestamp writes t as JavaScript's Date.prototype.toISOString does.
func timestamp(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// nullString turns a *string into a value SQLite stores as NULL when nil.
func nullString(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}

// stringPtr turns a scanned sql.NullString back into a *string (nil for NULL).
func stringPtr(ns sql.NullString) *string {
	if !ns.Valid {
		return nil
	}
	return &ns.String
}

// Form is a form as listed and as answered after create and update.
type Form struct {
	ID          int64   `json:"id"`
	Title       string  `json:"title"`
	Description *string `json:"description"`
	CreatedAt   string  `json:"createdAt"`
}

// FormDetail is a form with its categories and fields, in sortOrder.
type FormDetail struct {
	Form
	Categories []Category `json:"categories"`
}

// Category is one ordered group of fields of a form.
type Category struct {
	ID        int64   `json:"id"`
	FormID    int64   `json:"formId"`
	Name      string  `json:"name"`
	SortOrder int     `json:"sortOrder"`
	Fields    []Field `json:"fields"`
}

// Field is one typed question of a category.
type Field struct {
	ID          int64   `json:"id"`
	CategoryID  int64   `json:"categoryId"`
	Label       string  `json:"label"`
	Type        string  `json:"type"`
	Description *string `json:"description"`
	SortOrder   int     `json:"sortOrder"`
}

// FormInput is the body of create and update. Title is checked by the handler; the
// categories and fields are checked by the store while it inserts them, inside the
// transaction, so that a bad last field undoes everything before it.
type FormInput struct {
	Title       *string         `json:"title"`
	Description *string         `json:"description"`
	Categories  []CategoryInput `json:"categories"`
}

// CategoryInput is one category of a FormInput; a missing name is "".
type CategoryInput struct {
	Name   string       `json:"name"`
	Fields []FieldInput `json:"fields"`
}

// FieldInput is one field of a CategoryInput. Type stays raw JSON so that a wrong type of
// any JSON kind is reported as SPEC.md's "Invalid field type: <type>".
type FieldInput struct {
	Label       *string         `json:"label"`
	Type        json.RawMessage `json:"type"`
	Description *string         `json:"description"`
}

// ListForms returns every form, newest first.
func (s *Store) ListForms(ctx context.Context) ([]Form, error) {
	rows, err := s.read.QueryContext(ctx,
		`SELECT id, title, description, createdAt FROM forms ORDER BY createdAt DESC, id DESC`)
	if err != nil {
		return nil, fmt.Errorf("list forms: %w", err)
	}
	defer rows.Close()
	forms := []Form{}
	for rows.Next() {
		var f Form
		var desc sql.NullString
		if err := rows.Scan(&f.ID, &f.Title, &desc, &f.CreatedAt); err != nil {
			return nil, fmt.Errorf("list forms: %w", err)
		}
		f.Description = stringPtr(desc)
		forms = append(forms, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list forms: %w", err)
	}
	return forms, nil
}

// GetForm returns the form with its categories and fields, or errNotFound.
func (s *Store) GetForm(ctx context.Context, id int64) (FormDetail, error) {
	tx, err := s.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return FormDetail{}, fmt.Errorf("get form: %w", err)
	}
	defer tx.Rollback()
	return getForm(ctx, tx, id)
}

// getForm reads a form and its tree with two queries, whatever the number of categories.
func getForm(ctx context.Context, tx *sql.Tx, id int64) (FormDetail, error) {
	var f FormDetail
	var desc sql.NullString
	err := tx.QueryRowContext(ctx,
		`SELECT id, title, description, createdAt FROM forms WHERE id = ?`, id).
		Scan(&f.ID, &f.Title, &desc, &f.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return FormDetail{}, errNotFound
	}
	if err != nil {
		return FormDetail{}, fmt.Errorf("get form: %w", err)
	}
	f.Description = stringPtr(desc)

	f.Categories = []Category{}
	rows, err := tx.QueryContext(ctx,
		`SELECT id, name, sortOrder FROM categories WHERE formId = ? ORDER BY sortOrder, id`, id)
	if err != nil {
		return FormDetail{}, fmt.Errorf("get categories: %w", err)
	}
	defer rows.Close()
	index := map[int64]int{}
	for rows.Next() {
		c := Category{FormID: id, Fields: []Field{}}
		if err := rows.Scan(&c.ID, &c.Name, &c.SortOrder); err != nil {
			return FormDetail{}, fmt.Errorf("get categories: %w", err)
		}
		index[c.ID] = len(f.Categories)
		f.Categories = append(f.Categories, c)
	}
	if err := rows.Err(); err != nil {
		return FormDetail{}, fmt.Errorf("get categories: %w", err)
	}

	frows, err := tx.QueryContext(ctx,
		`SELECT f.id, f.categoryId, f.label, f.type, f.description, f.sortOrder
		   FROM fields f JOIN categories c ON c.id = f.categoryId
		  WHERE c.formId = ?
		  ORDER BY f.categoryId, f.sortOrder, f.id`, id)
	if err != nil {
		return FormDetail{}, fmt.Errorf("get fields: %w", err)
	}
	defer frows.Close()
	for frows.Next() {
		var fd Field
		var desc sql.NullString
		if err := frows.Scan(&fd.ID, &fd.CategoryID, &fd.Label, &fd.Type, &desc, &fd.SortOrder); err != nil {
			return FormDetail{}, fmt.Errorf("get fields: %w", err)
		}
		fd.Description = stringPtr(desc)
		c := &f.Categories[index[fd.CategoryID]]
		c.Fields = append(c.Fields, fd)
	}
	if err := frows.Err(); err != nil {
		return FormDetail{}, fmt.Errorf("get fields: %w", err)
	}
	return f, nil
}

// CreateForm stores a form with its categories and fields as one unit.
func (s *Store) CreateForm(ctx context.Context, in FormInput) (Form, error) {
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return Form{}, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()

	f := Form{Title: *in.Title, Description: in.Description, CreatedAt: timestamp(s.now())}
	err = tx.QueryRowContext(ctx,
		`INSERT INTO forms (title, description, createdAt) VALUES (?, ?, ?) RETURNING id`,
		f.Title, nullString(f.Description), f.CreatedAt).Scan(&f.ID)
	if err != nil {
		return Form{}, fmt.Errorf("insert form: %w", err)
	}
	if err := insertCategories(ctx, tx, f.ID, in.Categories); err != nil {
		return Form{}, err
	}
	if err := tx.Commit(); err != nil {
		return Form{}, fmt.Errorf("commit: %w", err)
	}
	return f, nil
}

// UpdateForm replaces title, description, categories and fields of a form as one unit,
// keeping its id and createdAt. The old fields go, and with them the response values
// that refer to them; the responses stay.
func (s *Store) UpdateForm(ctx context.Context, id int64, in FormInput) (Form, error) {
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return Form{}, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()

	s.fields.drop(id)
	f := Form{ID: id, Title: *in.Title, Description: in.Description}
	err = tx.QueryRowContext(ctx,
		`UPDATE forms SET title = ?, description = ? WHERE id = ? RETURNING createdAt`,
		f.Title, nullString(f.Description), id).Scan(&f.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return Form{}, errNotFound
	}
	if err != nil {
		return Form{}, fmt.Errorf("update form: %w", err)
	}
	// Every field is replaced, so every stored value of the form goes (schema.sql says
	// why this is not a cascade); the categories take their fields with them.
	if _, err := tx.ExecContext(ctx,
		`DELETE FROM response_values WHERE responseId IN (SELECT id FROM responses WHERE formId = ?)`, id); err != nil {
		return Form{}, fmt.Errorf("delete values: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM categories WHERE formId = ?`, id); err != nil {
		return Form{}, fmt.Errorf("delete categories: %w", err)
	}
	if err := insertCategories(ctx, tx, id, in.Categories); err != nil {
		return Form{}, err
	}
	if err := tx.Commit(); err != nil {
		return Form{}, fmt.Errorf("commit: %w", err)
	}
	return f, nil
}

// insertCategories checks and inserts categories and fields in array order, which is
// their sortOrder. It stops at the first invalid field with a *validationError.
func insertCategories(ctx context.Context, tx *sql.Tx, formID int64, cats []CategoryInput) error {
	for ci, c := range cats {
		var catID int64
		err := tx.QueryRowContext(ctx,
			`INSERT INTO categories (formId, name, sortOrder) VALUES (?, ?, ?) RETURNING id`,
			formID, c.Name, ci).Scan(&catID)
		if err != nil {
			return fmt.Errorf("insert category: %w", err)
		}
		for fi, fd := range c.Fields {
			typ, err := checkField(fd)
			if err != nil {
				return err
			}
			var desc *string
			if fd.Description != nil && *fd.Description != "" {
				desc = fd.Description
			}
			_, err = tx.ExecContext(ctx,
				`INSERT INTO fields (categoryId, label, type, description, sortOrder) VALUES (?, ?, ?, ?, ?)`,
				catID, *fd.Label, typ, nullString(desc), fi)
			if err != nil {
				return fmt.Errorf("insert field: %w", err)
			}
		}
	}
	return nil
}

// checkField applies DESIGN.md's field checks in order and returns the field's type.
func checkField(fd FieldInput) (string, error) {
	if fd.Label == nil || strings.TrimSpace(*fd.Label) == "" {
		return "", &validationError{"Field label is required"}
	}
	var typ string
	if json.Unmarshal(fd.Type, &typ) != nil || !fieldTypes[typ] {
		return "", &validationError{"Invalid field type: " + jsDisplay(fd.Type)}
	}
	return typ, nil
}

// DeleteForm removes a form; the schema's cascades remove everything that belongs to it.
func (s *Store) DeleteForm(ctx context.Context, id int64) error {
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	s.fields.drop(id)
	res, err := tx.ExecContext(ctx, `DELETE FROM forms WHERE id = ?`, id)
	if err != nil {
		return fmt.Errorf("delete form: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("delete form: %w", err)
	}
	if n == 0 {
		return errNotFound
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// formExists returns nil when the form exists and errNotFound when it does not.
func formExists(ctx context.Context, tx *sql.Tx, formID int64) error {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM forms WHERE id = ?`, formID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return errNotFound
	}
	if err != nil {
		return fmt.Errorf("find form: %w", err)
	}
	return nil
}

// Response is one listed response with its values in form order.
type Response struct {
	ID          int64
	SubmittedAt string
	Values      []ResponseValue
}

// ResponseValue is one answer of a listed response.
type ResponseValue struct {
	Field *ListedField
	Value *string
}

// ListedField is what the response list shows of a field, and its place in the form.
type ListedField struct {
	ID       int64
	Label    string
	Type     string
	position int // category sortOrder, then field sortOrder, as an index
}

// EachResponse calls fn for every response of a form, newest first, each with its values
// in form order. It reads them with one query whatever their number, and hands them over
// one at a time, so that a list of any length is never held in memory whole. fn must not
// keep the Response: its Values are reused. errNotFound when the form does not exist,
// before fn is ever called.
func (s *Store) EachResponse(ctx context.Context, formID int64, fn func(Response) error) error {
	tx, err := s.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()

	fields, err := listedFields(ctx, tx, formID)
	if err != nil {
		return err
	}
	rows, err := tx.QueryContext(ctx,
		`SELECT r.id, r.submittedAt, rv.fieldId, rv.value
		   FROM responses r LEFT JOIN response_values rv ON rv.responseId = r.id
		  WHERE r.formId = ?
		  ORDER BY r.submittedAt DESC, r.id DESC`, formID)
	if err != nil {
		return fmt.Errorf("list responses: %w", err)
	}
	defer rows.Close()
	var cur Response
	flush := func() error {
		if cur.ID == 0 {
			return nil
		}
		slices.SortFunc(cur.Values, func(a, b ResponseValue) int { return a.Field.position - b.Field.position })
		return fn(cur)
	}
	for rows.Next() {
		var id int64
		var submittedAt string
		var fieldID sql.NullInt64
		var value sql.NullString
		if err := rows.Scan(&id, &submittedAt, &fieldID, &value); err != nil {
			return fmt.Errorf("list responses: %w", err)
		}
		if id != cur.ID {
			if err := flush(); err != nil {
				return err
			}
			cur = Response{ID: id, SubmittedAt: submittedAt, Values: cur.Values[:0]}
		}
		if f, ok := fields[fieldID.Int64]; fieldID.Valid && ok {
			cur.Values = append(cur.Values, ResponseValue{Field: f, Value: stringPtr(value)})
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("list responses: %w", err)
	}
	return flush()
}

// listedFields returns the fields of a form by id, or errNotFound for a missing form.
func listedFields(ctx context.Context, tx *sql.Tx, formID int64) (map[int64]*ListedField, error) {
	if err := formExists(ctx, tx, formID); err != nil {
		return nil, err
	}
	rows, err := tx.QueryContext(ctx,
		`SELECT f.id, f.label, f.type
		   FROM fields f JOIN categories c ON c.id = f.categoryId
		  WHERE c.formId = ?
		  ORDER BY c.sortOrder, f.sortOrder, f.id`, formID)
	if err != nil {
		return nil, fmt.Errorf("list fields: %w", err)
	}
	defer rows.Close()
	fields := map[int64]*ListedField{}
	for rows.Next() {
		f := &ListedField{position: len(fields)}
		if err := rows.Scan(&f.ID, &f.Label, &f.Type); err != nil {
			return nil, fmt.Errorf("list fields: %w", err)
		}
		fields[f.ID] = f
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list fields: %w", err)
	}
	return fields, nil
}

// ResponseExport returns what the PDF of a response shows: the form and the response's
// values by field id. errNotFound when the response does not exist.
func (s *Store) ResponseExport(ctx context.Context, responseID int64) (FormDetail, map[int64]*string, error) {
	tx, err := s.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return FormDetail{}, nil, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()

	var formID int64
	err = tx.QueryRowContext(ctx, `SELECT formId FROM responses WHERE id = ?`, responseID).Scan(&formID)
	if errors.Is(err, sql.ErrNoRows) {
		return FormDetail{}, nil, errNotFound
	}
	if err != nil {
		return FormDetail{}, nil, fmt.Errorf("find response: %w", err)
	}
	form, err := getForm(ctx, tx, formID)
	if err != nil {
		return FormDetail{}, nil, err
	}
	rows, err := tx.QueryContext(ctx,
		`SELECT fieldId, value FROM response_values WHERE responseId = ?`, responseID)
	if err != nil {
		return FormDetail{}, nil, fmt.Errorf("read values: %w", err)
	}
	defer rows.Close()
	values := map[int64]*string{}
	for rows.Next() {
		var fieldID int64
		var value sql.NullString
		if err := rows.Scan(&fieldID, &value); err != nil {
			return FormDetail{}, nil, fmt.Errorf("read values: %w", err)
		}
		values[fieldID] = stringPtr(value)
	}
	if err := rows.Err(); err != nil {
		return FormDetail{}, nil, fmt.Errorf("read values: %w", err)
	}
	return form, values, nil
}

// Setting returns the value stored under key, or "" when there is none.
func (s *Store) Setting(ctx context.Context, key string) (string, error) {
	var value string
	err := s.read.QueryRowContext(ctx, `SELECT value FROM settings WHERE key = ?`, key).Scan(&value)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read setting: %w", err)
	}
	return value, nil
}

// PutSetting creates or overwrites the setting key.
func (s *Store) PutSetting(ctx context.Context, key, value string) error {
	_, err := s.write.ExecContext(ctx,
		`INSERT INTO settings (key, value) VALUES (?, ?)
		 ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value)
	if err != nil {
		return fmt.Errorf("write setting: %w", err)
	}
	return nil
}

// Summary is a stored tracker or e-mail summary.
type Summary struct {
	ID          int64  `json:"id"`
	SummaryDate string `json:"summaryDate"`
	SummaryText string `json:"summaryText"`
	GeneratedAt string `json:"generatedAt"`
}

// summaryKind names one of the two summary tables. Table names cannot be SQL parameters;
// these are the only two values a query ever interpolates, never input.
type summaryKind string

const (
	trackerSummaries summaryKind = "tracker_summaries"
	emailSummaries   summaryKind = "email_summaries"
)

// SaveTrackerSummary stores the tracker summary of the day starting at date, replacing the
// text and generatedAt of an existing one and keeping its id.
func (s *Store) SaveTrackerSummary(ctx context.Context, date time.Time, text string) error {
	_, err := s.write.ExecContext(ctx,
		`INSERT INTO tracker_summaries (summaryDate, summaryText, generatedAt) VALUES (?, ?, ?)
		 ON CONFLICT (summaryDate) DO UPDATE SET summaryText = excluded.summaryText, generatedAt = excluded.generatedAt`,
		timestamp(date), text, timestamp(s.now()))
	if err != nil {
		return fmt.Errorf("save tracker summary: %w", err)
	}
	return nil
}

// AddEmailSummary appends an e-mail summary for the day starting at date.
func (s *Store) AddEmailSummary(ctx context.Context, date time.Time, text string) error {
	_, err := s.write.ExecContext(ctx,
		`INSERT INTO email_summaries (summaryDate, summaryText, generatedAt) VALUES (?, ?, ?)`,
		timestamp(date), text, timestamp(s.now()))
	if err != nil {
		return fmt.Errorf("add email summary: %w", err)
	}
	return nil
}

// TrackerSummary returns the tracker summary of the day starting at date, or errNotFound.
func (s *Store) TrackerSummary(ctx context.Context, date time.Time) (Summary, error) {
	var sum Summary
	err := s.read.QueryRowContext(ctx,
		`SELECT id, summaryDate, summaryText, generatedAt FROM tracker_summaries WHERE summaryDate = ?`,
		timestamp(date)).Scan(&sum.ID, &sum.SummaryDate, &sum.SummaryText, &sum.GeneratedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return Summary{}, errNotFound
	}
	if err != nil {
		return Summary{}, fmt.Errorf("read tracker summary: %w", err)
	}
	return sum, nil
}

// ListSummaries returns one page of summaries of a kind, newest summaryDate first, and
// the count of all of them.
func (s *Store) ListSummaries(ctx context.Context, kind summaryKind, limit, offset int64) ([]Summary, int64, error) {
	table := string(kind)
	if kind != trackerSummaries && kind != emailSummaries {
		return nil, 0, fmt.Errorf("list summaries: unknown kind %q", kind)
	}
	tx, err := s.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, 0, fmt.Errorf("list summaries: %w", err)
	}
	defer tx.Rollback()
	var total int64
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM `+table).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count summaries: %w", err)
	}
	rows, err := tx.QueryContext(ctx,
		`SELECT id, summaryDate, summaryText, generatedAt FROM `+table+`
		  ORDER BY summaryDate DESC, id DESC LIMIT ? OFFSET ?`, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("list summaries: %w", err)
	}
	defer rows.Close()
	list := []Summary{}
	for rows.Next() {
		var sum Summary
		if err := rows.Scan(&sum.ID, &sum.SummaryDate, &sum.SummaryText, &sum.GeneratedAt); err != nil {
			return nil, 0, fmt.Errorf("list summaries: %w", err)
		}
		list = append(list, sum)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("list summaries: %w", err)
	}
	return list, total, nil
}

// Submits, the service's hot write: batched into shared transactions by one goroutine,
// with each form's field ids cached for the checks.

// fieldSets caches the field ids of each form for submits, which need them on every
// call. It is used only inside write transactions, which the single write connection runs
// one at a time, and every change of a form's fields (update, delete) drops the form's
// entry inside its own transaction. An entry therefore always matches the committed
// fields, and its presence means the form exists.
type fieldSets struct {
	mu   sync.Mutex
	sets map[int64]map[int64]bool
}

func (c *fieldSets) get(formID int64) map[int64]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sets[formID]
}

func (c *fieldSets) put(formID int64, set map[int64]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sets == nil || len(c.sets) >= maxCachedForms {
		c.sets = map[int64]map[int64]bool{}
	}
	c.sets[formID] = set
}

func (c *fieldSets) drop(formID int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.sets, formID)
}

// SubmittedValue is one entry of a submitted `values` object: the key as sent and the
// value as String(value) wrote it (nil for JSON null). A later entry for the same field
// overwrites an earlier one.
type SubmittedValue struct {
	Key   string
	Value *string
}

// maxSubmitBatch bounds how many submits share one transaction.
const maxSubmitBatch = 64

// pendingSubmit is a submit waiting for the batch writer.
type pendingSubmit struct {
	formID int64
	values []SubmittedValue
	done   chan submitResult // buffered: the writer never waits for the caller
}

type submitResult struct {
	id  int64
	err error
}

// CreateResponse stores a response to a form with those values whose key names a field
// of the form; other keys are skipped. Keys are parsed by the strict id rule.
//
// Submits are the service's hot write. Rather than one transaction each, a single
// goroutine (writeSubmits) takes every submit that is waiting and writes them in one
// transaction, each inside a savepoint, so that one failing submit (a missing form)
// leaves the others untouched. A submit returns only after the transaction that holds
// it has committed: nothing is acknowledged that is not in the database.
func (s *Store) CreateResponse(ctx context.Context, formID int64, values []SubmittedValue) (int64, error) {
	p := &pendingSubmit{formID: formID, values: values, done: make(chan submitResult, 1)}
	s.closeMu.RLock()
	if s.closed {
		s.closeMu.RUnlock()
		return 0, errors.New("store closed")
	}
	select {
	case s.submits <- p:
	case <-ctx.Done():
		s.closeMu.RUnlock()
		return 0, ctx.Err()
	}
	s.closeMu.RUnlock()
	// Once handed over, the submit is written or refused as a whole: wait for which.
	r := <-p.done
	return r.id, r.err
}

// writeSubmits writes submits in batches until Close, taking whatever is waiting when
// the previous batch is done; under no load a batch is a single submit.
func (s *Store) writeSubmits() {
	defer close(s.submitsDone)
	for p := range s.submits {
		batch := []*pendingSubmit{p}
	gather:
		for len(batch) < maxSubmitBatch {
			select {
			case q, ok := <-s.submits:
				if !ok {
					break gather
				}
				batch = append(batch, q)
			default:
				break gather
			}
		}
		results := s.writeBatch(batch)
		for i, p := range batch {
			p.done <- results[i]
		}
	}
}

// writeBatch writes a batch of submits in one transaction and returns each one's result.
// It runs on its own context: no one caller's cancellation may undo the others' work.
func (s *Store) writeBatch(batch []*pendingSubmit) []submitResult {
	ctx := context.Background()
	results := make([]submitResult, len(batch))
	// fail gives every submit not already refused the error that ends the transaction.
	fail := func(err error) []submitResult {
		for i := range results {
			if results[i].err == nil {
				results[i] = submitResult{err: err}
			}
		}
		return results
	}
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return fail(fmt.Errorf("begin: %w", err))
	}
	defer tx.Rollback()
	if len(batch) == 1 {
		// A lone submit needs no savepoint: its failure is the transaction's.
		id, err := s.insertResponse(ctx, tx, batch[0].formID, batch[0].values)
		if err != nil {
			return fail(err)
		}
		results[0].id = id
	} else {
		for i, p := range batch {
			if results[i], err = s.insertInSavepoint(ctx, tx, p); err != nil {
				return fail(err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fail(fmt.Errorf("commit: %w", err))
	}
	return results
}

// insertInSavepoint writes one submit of a batch so that its failure undoes only its own
// rows. The error is one that ends the whole transaction; the submit's own failure is in
// the result.
func (s *Store) insertInSavepoint(ctx context.Context, tx *sql.Tx, p *pendingSubmit) (submitResult, error) {
	if _, err := tx.ExecContext(ctx, `SAVEPOINT submit`); err != nil {
		return submitResult{}, fmt.Errorf("savepoint: %w", err)
	}
	id, err := s.insertResponse(ctx, tx, p.formID, p.values)
	if err != nil {
		// After some errors (a full disk among them) SQLite has already rolled the whole
		// transaction back; then the savepoint is gone, and this fails the batch.
		if _, rerr := tx.ExecContext(ctx, `ROLLBACK TO submit`); rerr != nil {
			return submitResult{}, fmt.Errorf("rollback to savepoint: %w (after %w)", rerr, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `RELEASE submit`); err != nil {
		return submitResult{}, fmt.Errorf("release savepoint: %w", err)
	}
	return submitResult{id: id, err: err}, nil
}

// insertResponse writes one response and its values inside tx.
func (s *Store) insertResponse(ctx context.Context, tx *sql.Tx, formID int64, values []SubmittedValue) (int64, error) {
	fieldIDs, err := s.formFieldIDs(ctx, tx, formID)
	if err != nil {
		return 0, err
	}
	var responseID int64
	err = tx.QueryRowContext(ctx,
		`INSERT INTO responses (formId, submittedAt) VALUES (?, ?) RETURNING id`,
		formID, timestamp(s.now())).Scan(&responseID)
	if err != nil {
		return 0, fmt.Errorf("insert response: %w", err)
	}
	args := make([]any, 0, 3*len(values))
	for _, v := range values {
		if fieldID, ok := parseID(v.Key); ok && fieldIDs[fieldID] {
			args = append(args, responseID, fieldID, nullString(v.Value))
		}
	}
	if err := insertValues(ctx, tx, args); err != nil {
		return 0, err
	}
	return responseID, nil
}

// formFieldIDs returns the ids of a form's fields, or errNotFound when the form does not
// exist. tx must be a write transaction (see fieldSets).
func (s *Store) formFieldIDs(ctx context.Context, tx *sql.Tx, formID int64) (map[int64]bool, error) {
	if set := s.fields.get(formID); set != nil {
		return set, nil
	}
	if err := formExists(ctx, tx, formID); err != nil {
		return nil, err
	}
	rows, err := tx.QueryContext(ctx,
		`SELECT f.id FROM fields f JOIN categories c ON c.id = f.categoryId WHERE c.formId = ?`, formID)
	if err != nil {
		return nil, fmt.Errorf("list fields: %w", err)
	}
	defer rows.Close()
	set := map[int64]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("list fields: %w", err)
		}
		set[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list fields: %w", err)
	}
	s.fields.put(formID, set)
	return set, nil
}

// insertValues inserts (responseId, fieldId, value) triples with one multi-row
// statement per 500 rows, rather than one statement per value. Only the number of
// placeholders varies; every value is a parameter.
func insertValues(ctx context.Context, tx *sql.Tx, args []any) error {
	const rowsPerStatement = 500
	for len(args) > 0 {
		n := min(len(args)/3, rowsPerStatement)
		query := `INSERT INTO response_values (responseId, fieldId, value) VALUES (?, ?, ?)` +
			strings.Repeat(`, (?, ?, ?)`, n-1) +
			` ON CONFLICT (responseId, fieldId) DO UPDATE SET value = excluded.value`
		if _, err := tx.ExecContext(ctx, query, args[:3*n]...); err != nil {
			return fmt.Errorf("insert values: %w", err)
		}
		args = args[3*n:]
	}
	return nil
}
