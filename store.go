package main

import (
	"context"
	"database/sql"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/mattn/go-sqlite3"
	"golang.org/x/sync/singleflight"
)

// migrations are the schema, one step per file: a database at PRAGMA user_version n gets
// migrations[n:] at start. A released file is never edited; a change is a new file at the
// end, so that every existing forms.db follows. (golink embeds its schema.sql alike.)
var migrations = []string{migration1, migration2}

var (
	//go:embed migrations/1.sql
	migration1 string
	//go:embed migrations/2.sql
	migration2 string
)

// Store is the SQLite database behind the service, as two pools on one file. write has one
// connection: SQLite allows one writer at a time, so writers, each waiting at most writeWait
// for it (writeConn), never meet each other's locks; only an outside one (Litestream's
// checkpoint) makes a write wait, up to busyTimeout. read's connections are query-only: in
// WAL mode they never wait for the writer.
type Store struct {
	write *sql.DB
	read  *sql.DB
	now   func() time.Time
	// writeWait is the const writeWait; tests shorten it.
	writeWait time.Duration
	forms     formCache
	// formReads shares one read of a form among the GetForm calls that miss it together:
	// a burst of reads of a large form, uncached, is one statement, not one per reader.
	formReads singleflight.Group
	// refused is why the database refused the last write that reached it (disk full,
	// read-only, I/O error), nil once one succeeds: /healthz reports what clients meet.
	refused atomic.Pointer[string]
}

// busyTimeout is how long a connection waits for a lock another holds (SQLite's
// busy_timeout): Litestream's checkpoints take short write locks (docs/DESIGN.md).
const busyTimeout = 10 * time.Second

// writeWait bounds a write's wait for the write connection: half the shutdown's grace,
// so that the last let in can finish.
const writeWait = 5 * time.Second

var (
	// ErrNotFound is the error for a record that does not exist.
	ErrNotFound = errors.New("record not found")
	// ErrBusy is the error of a write that found the write connection taken for writeWait:
	// a crowd of writers is refused within seconds, nothing written, not queued without end.
	ErrBusy = errors.New("database busy")
)

// OpenStore opens (creating when absent) the SQLite file at path and migrates it.
func OpenStore(ctx context.Context, path string, now func() time.Time) (*Store, error) {
	if strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("open database: path %q must not contain '?' or '#'", path)
	}
	if err := checkFolder(path); err != nil {
		return nil, err
	}
	// The schema version is read on a read-only connection, so that a database a newer
	// program migrated is refused before anything is written to it: the pools' first
	// connection turns a database in rollback-journal mode (a backup) into WAL mode.
	version := 0 // a database not there yet
	if _, err := os.Stat(path); err == nil {
		db := openReadOnly(path)
		err := db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version)
		db.Close()
		if err != nil {
			return nil, fmt.Errorf("read schema version: %w", err)
		}
	}
	if version > len(migrations) {
		return nil, fmt.Errorf("database schema version %d is newer than this program's %d", version, len(migrations))
	}
	// synchronous=NORMAL in WAL mode keeps every commit across a crash of the process (kill
	// -9); a power loss may lose the last ones, the usual trade for not syncing each commit.
	dsn := fmt.Sprintf("%s?_journal_mode=WAL&_synchronous=NORMAL&_foreign_keys=on&_busy_timeout=%d",
		path, busyTimeout.Milliseconds())
	// sql.Open fails only for a driver that is not registered; the first query reports the
	// rest. database/sql's BeginTx(ReadOnly: true) is ignored by go-sqlite3: query_only
	// makes SQLite itself refuse writes on the read pool.
	write, _ := sql.Open("sqlite3", dsn+"&_txlock=immediate")
	read, _ := sql.Open("sqlite3", dsn+"&_query_only=on")
	s := &Store{write: write, read: read, now: now, writeWait: writeWait,
		forms: formCache{maxBytes: formCacheBytes}}
	s.write.SetMaxOpenConns(1)
	// No handler holds a connection while its client reads: one per core keeps them busy.
	readers := max(4, runtime.NumCPU())
	s.read.SetMaxOpenConns(readers)
	s.read.SetMaxIdleConns(readers)
	// The pending migrations commit together, each with its version: a crash, or a step
	// that fails (another program's database), leaves the database as it was.
	if version < len(migrations) {
		err := s.inTx(ctx, func(tx *sql.Tx) error {
			for v := version + 1; v <= len(migrations); v++ {
				// PRAGMA takes no parameters; v is this program's own counter, never input.
				script := fmt.Sprintf("%s;\nPRAGMA user_version = %d", migrations[v-1], v)
				if _, err := tx.ExecContext(ctx, script); err != nil {
					return fmt.Errorf("migrate to schema version %d: %w", v, err)
				}
			}
			return nil
		})
		if err != nil {
			return nil, errors.Join(err, s.Close())
		}
	}
	return s, nil
}

// checkFolder makes sure that the database's folder exists and can be written, as SQLite
// needs for the -wal and -shm files, by writing a file there: SQLite's own error for
// either is "unable to open database file", with an errno that may be another's.
func checkFolder(path string) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".formsvc-check-*")
	if err != nil {
		if pe, ok := errors.AsType[*fs.PathError](err); ok {
			err = pe.Err // the file's name is ours; the folder's is what the reader needs
		}
		return fmt.Errorf("database folder %s cannot be written: %w", dir, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// writeConn takes the write connection, waiting at most writeWait (ErrBusy); the caller
// closes it, which gives it back.
func (s *Store) writeConn(ctx context.Context) (*sql.Conn, error) {
	wait, cancel := context.WithTimeout(ctx, s.writeWait)
	defer cancel()
	conn, err := s.write.Conn(wait)
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return nil, ErrBusy
	}
	if err != nil {
		return nil, s.noteWrite(fmt.Errorf("write connection: %w", err))
	}
	return conn, nil
}

// inTx runs fn in a write transaction, committed if fn returns nil, else rolled back.
func (s *Store) inTx(ctx context.Context, fn func(*sql.Tx) error) error {
	conn, err := s.writeConn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return s.noteWrite(fmt.Errorf("begin: %w", err))
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return s.noteWrite(err)
	}
	if err := tx.Commit(); err != nil {
		return s.noteWrite(fmt.Errorf("commit: %w", err))
	}
	return s.noteWrite(nil)
}

// noteWrite records the outcome of a write that reached the database, and returns it.
func (s *Store) noteWrite(err error) error {
	refusals := []sqlite3.ErrNo{sqlite3.ErrFull, sqlite3.ErrReadonly, sqlite3.ErrIoErr, sqlite3.ErrCantOpen}
	se, isSQLite := errors.AsType[sqlite3.Error](err)
	switch {
	case err == nil:
		s.refused.Store(nil)
	case isSQLite && slices.Contains(refusals, se.Code):
		s.refused.Store(new(se.Code.Error()))
	}
	return err
}

// exec runs one write statement on its own, its error wrapped with what.
func (s *Store) exec(ctx context.Context, what, query string, args ...any) error {
	conn, err := s.writeConn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = conn.ExecContext(ctx, query, args...)
	if err = s.noteWrite(err); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// ProbeWrite makes a write that needs room and leaves nothing, to learn whether the
// database takes writes again: a row of 8 KiB under a key no client can use (keys with
// control characters are refused), inserted and deleted in one transaction.
func (s *Store) ProbeWrite(ctx context.Context) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO settings (key, value) VALUES (?, ?)`,
			"\x00probe", strings.Repeat(" ", 8<<10))
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM settings WHERE key = ?`, "\x00probe")
		return err
	})
}

// WriteRefusal is why the database refused the last write that reached it; "" if it took it.
func (s *Store) WriteRefusal() string {
	if reason := s.refused.Load(); reason != nil {
		return *reason
	}
	return ""
}

// Close closes both pools.
func (s *Store) Close() error {
	return errors.Join(s.read.Close(), s.write.Close())
}

// Backup copies the database at path, which the service may be writing, to dest, which
// must not exist, and returns the copy's size. VACUUM INTO (database/sql cannot reach
// SQLite's backup API) copies the last commit without blocking the writer to a temporary
// file, checked and synced before it is linked to dest, which is never half-written.
func Backup(ctx context.Context, path, dest string) (int64, error) {
	if _, err := os.Stat(path); err != nil {
		return 0, fmt.Errorf("no database to back up: %w", err)
	}
	if _, err := os.Lstat(dest); err == nil {
		return 0, fmt.Errorf("%s already exists; a backup never replaces a file", dest)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dest), "."+filepath.Base(dest)+".tmp-*")
	if err != nil {
		return 0, fmt.Errorf("backup destination: %w", err)
	}
	defer os.Remove(tmp.Name()) // once linked to dest, only the temporary name goes
	defer tmp.Close()
	db := openReadOnly(path)
	_, err = db.ExecContext(ctx, `VACUUM INTO ?`, tmp.Name())
	db.Close()
	if err != nil {
		return 0, fmt.Errorf("copy database: %w", err)
	}
	if err := checkCopy(ctx, tmp.Name()); err != nil {
		return 0, err
	}
	info, err := tmp.Stat()
	if err != nil {
		return 0, fmt.Errorf("backup destination: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return 0, fmt.Errorf("backup destination: %w", err)
	}
	if err := os.Link(tmp.Name(), dest); err != nil {
		return 0, fmt.Errorf("backup destination: %w", err)
	}
	if dir, err := os.Open(filepath.Dir(dest)); err == nil { // the new name survives a crash
		dir.Sync()
		dir.Close()
	}
	return info.Size(), nil
}

// openReadOnly opens the database at path as a file: URI with mode=ro (go-sqlite3 drops
// it from a plain path), so that nothing is written to it, not even the checkpoint of a
// closing connection, and a missing database is an error rather than a new file.
func openReadOnly(path string) *sql.DB {
	query := fmt.Sprintf("mode=ro&_busy_timeout=%d", busyTimeout.Milliseconds())
	// Cleaned, a path never starts with // (a URI's authority); OmitHost writes a relative
	// one as file:dir/name, which SQLite reads as relative.
	uri := url.URL{Scheme: "file", OmitHost: true, Path: filepath.Clean(path), RawQuery: query}
	db, _ := sql.Open("sqlite3", uri.String()) // as OpenStore's: errors come at the first query
	return db
}

// checkCopy runs integrity_check on the copy at path.
func checkCopy(ctx context.Context, path string) error {
	db := openReadOnly(path)
	defer db.Close()
	var result string
	if err := db.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&result); err != nil {
		return fmt.Errorf("check copy: %w", err)
	}
	if result != "ok" {
		return fmt.Errorf("check copy: integrity_check says %q", result)
	}
	return nil
}

// queryError is ErrNotFound for sql.ErrNoRows, else err with what was being done; nil for nil.
func queryError(what string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sql.ErrNoRows):
		return ErrNotFound
	}
	return fmt.Errorf("%s: %w", what, err)
}

// Ping checks that the read pool can reach the database.
func (s *Store) Ping(ctx context.Context) error {
	return s.read.PingContext(ctx)
}

// timestamp writes t as JavaScript's Date.prototype.toISOString does.
func timestamp(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// Form is a form as GET /api/forms lists it.
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

// Lists are read a page at a time, each with its own statement, so that no snapshot is
// open while a client reads slowly: a page holds at most listPageRows rows, and a page of
// responses stops at the first response that begins past listPageBytes of values.
const (
	listPageRows  = 64
	listPageBytes = 256 << 10
)

// Cursor is where the next page of a list, newest first, begins: after this time and id.
type Cursor struct {
	Time string
	ID   int64
}

// listStart is the cursor of a list's first page: after every row.
func listStart() Cursor { return Cursor{Time: "9999-12-31T23:59:59.999Z", ID: math.MaxInt64} }

// ListForms returns a page of forms, newest first, after the cursor, and the cursor of
// the next page; nil when this is the last.
func (s *Store) ListForms(ctx context.Context, after Cursor) ([]Form, *Cursor, error) {
	var forms []Form
	err := s.read.QueryRowContext(ctx,
		`SELECT json_group_array(json_object('id', id, 'title', title,
		            'description', description, 'createdAt', createdAt)
		            ORDER BY createdAt DESC, id DESC)
		   FROM (SELECT * FROM forms WHERE (createdAt, id) < (?, ?)
		          ORDER BY createdAt DESC, id DESC LIMIT ?)`,
		after.Time, after.ID, listPageRows).Scan(jsonColumn{&forms})
	if err != nil {
		return nil, nil, fmt.Errorf("list forms: %w", err)
	}
	if len(forms) < listPageRows {
		return forms, nil, nil
	}
	last := forms[len(forms)-1]
	return forms, &Cursor{last.CreatedAt, last.ID}, nil
}

// GetForm returns a copy of the form, its categories and fields, or ErrNotFound: the one
// the cache keeps, else one read (readForm).
func (s *Store) GetForm(ctx context.Context, id int64) (FormDetail, error) {
	f, gen, ok := s.forms.get(id)
	if !ok {
		// Shared by the calls that began at one generation: one that began after an update
		// never gets the form as it was. Run for all of them, it outlives a caller that left.
		v, err, _ := s.formReads.Do(fmt.Sprint(id, "@", gen), func() (any, error) {
			return s.readForm(context.WithoutCancel(ctx), id, gen)
		})
		if err != nil {
			return FormDetail{}, err
		}
		f = v.(FormDetail)
	}
	// Copied, so that the cache and its callers never share what one of them might change.
	f.Categories = slices.Clone(f.Categories)
	for i := range f.Categories {
		f.Categories[i].Fields = slices.Clone(f.Categories[i].Fields)
	}
	return f, nil
}

// readForm reads a form with its tree in one statement, so from one snapshot, as SQLite
// writes them: the JSON of a FormDetail (json() keeps a subquery's array an array), and
// keeps it unless a write moved the cache past gen.
func (s *Store) readForm(ctx context.Context, id int64, gen uint64) (FormDetail, error) {
	var f FormDetail
	err := s.read.QueryRowContext(ctx,
		`SELECT json_object('id', id, 'title', title, 'description', description,
		        'createdAt', createdAt, 'categories', json((
		   SELECT json_group_array(json_object('id', c.id, 'formId', c.formId, 'name', c.name,
		              'sortOrder', c.sortOrder, 'fields', json((
		      SELECT json_group_array(json_object('id', d.id, 'categoryId', d.categoryId,
		                 'label', d.label, 'type', d.type, 'description', d.description,
		                 'sortOrder', d.sortOrder) ORDER BY d.sortOrder, d.id)
		        FROM fields d WHERE d.categoryId = c.id))) ORDER BY c.sortOrder, c.id)
		     FROM categories c WHERE c.formId = f.id)))
		   FROM forms f WHERE id = ?`, id).Scan(jsonColumn{&f})
	if err != nil {
		return FormDetail{}, queryError("get form", err)
	}
	s.forms.put(id, gen, f)
	return f, nil
}

// formCacheBytes bounds the forms GetForm keeps, by formSize.
const formCacheBytes = 8 << 20

// formCache keeps forms as GetForm read them: the form read, the most frequent request,
// measured far short of its target without it (docs/PERFORMANCE.md). UpdateForm and
// DeleteForm drop a form after their commit and bump gen; a read keeps its form only if gen
// has not moved since it began, as one that began before a commit may hold the old form.
// (A new form needs no drop: ids are never reused, and a missing form is not kept.)
type formCache struct {
	mu       sync.Mutex
	gen      uint64
	forms    map[int64]FormDetail
	bytes    int // sum of formSize over forms
	maxBytes int
}

// get returns the kept form, or the generation to give put.
func (c *formCache) get(id int64) (FormDetail, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.forms[id]
	return f, c.gen, ok
}

// put keeps f unless a write dropped a form since gen was read. A form that does not fit
// in what is left empties the cache first.
func (c *formCache) put(id int64, gen uint64, f FormDetail) {
	size := formSize(f)
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen || size > c.maxBytes {
		return
	}
	if old, ok := c.forms[id]; ok { // two reads of one form that missed together both put it
		c.bytes -= formSize(old)
	}
	if c.forms == nil || c.bytes+size > c.maxBytes {
		c.forms, c.bytes = map[int64]FormDetail{}, 0
	}
	c.forms[id] = f
	c.bytes += size
}

// drop forgets a form; UpdateForm and DeleteForm call it after their commit.
func (c *formCache) drop(id int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if f, ok := c.forms[id]; ok {
		c.bytes -= formSize(f)
		delete(c.forms, id)
	}
}

// formSize estimates the memory a kept form takes: its text and a fixed cost per
// record for the structs and slice headers.
func formSize(f FormDetail) int {
	const perRecord = 96
	n := perRecord + len(f.Title) + len(f.CreatedAt)
	if f.Description != nil {
		n += len(*f.Description)
	}
	for _, c := range f.Categories {
		n += perRecord + len(c.Name)
		for _, fd := range c.Fields {
			n += perRecord + len(fd.Label) + len(fd.Type)
			if fd.Description != nil {
				n += len(*fd.Description)
			}
		}
	}
	return n
}

// jsonColumn scans a JSON text that SQLite wrote (json_object, json_group_array) into to.
type jsonColumn struct{ to any }

func (c jsonColumn) Scan(src any) error {
	switch src := src.(type) {
	case string: // go-sqlite3 gives TEXT as a string
		return json.Unmarshal([]byte(src), c.to)
	case []byte:
		return json.Unmarshal(src, c.to)
	}
	return fmt.Errorf("JSON column: got %T", src)
}

// fieldTypes are the five field types a form may use; the schema's CHECK repeats them.
var fieldTypes = map[string]bool{"text": true, "number": true, "date": true, "textarea": true, "boolean": true}

// FormInput is a form to create or update: the body of create and update, which forms.go
// reads and checks (Valid). The store checks each category and field as it inserts them
// (checkField), so that a missing form is a 404 before a bad field is a 500, as in the
// original.
type FormInput struct {
	Title       string // absent or null: ""
	Description *string
	Categories  []CategoryInput
}

// CategoryInput is one category of a FormInput; a missing name is "".
type CategoryInput struct {
	Name   string
	Fields []FieldInput
}

// FieldInput is one field. Type is JavaScript's String() of the type sent ("undefined"
// when none was), for "Invalid field type: <type>"; TypeIsString, whether it was a string.
type FieldInput struct {
	Label        *string
	Type         string
	TypeIsString bool
	Description  *string
}

// RuleError is a form rule that a category or field breaks (docs/SPEC.md §7, which answers
// them 500); its text is what the client reads.
type RuleError string

func (e RuleError) Error() string { return string(e) }

// checkCategory and checkField are the rules for each category and field, in
// docs/DESIGN.md's order; checkField returns the field's type.
func checkCategory(c CategoryInput) error {
	if utf8.RuneCountInString(c.Name) > maxLabelChars {
		return RuleError(fmt.Sprintf("Category name is too long (at most %d characters)", maxLabelChars))
	}
	return nil
}

func checkField(fd FieldInput) (string, error) {
	if fd.Label == nil || strings.TrimSpace(*fd.Label) == "" {
		return "", RuleError("Field label is required")
	}
	if !fd.TypeIsString || !fieldTypes[fd.Type] {
		return "", RuleError("Invalid field type: " + fd.Type)
	}
	if utf8.RuneCountInString(*fd.Label) > maxLabelChars {
		return "", RuleError(fmt.Sprintf("Field label is too long (at most %d characters)", maxLabelChars))
	}
	if fd.Description != nil && utf8.RuneCountInString(*fd.Description) > maxDescriptionChars {
		return "", RuleError(fmt.Sprintf("Field description is too long (at most %d characters)", maxDescriptionChars))
	}
	return fd.Type, nil
}

// CreateForm stores a form with its categories and fields as one unit.
func (s *Store) CreateForm(ctx context.Context, in FormInput) (Form, error) {
	f := Form{Title: in.Title, Description: in.Description, CreatedAt: timestamp(s.now())}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx,
			`INSERT INTO forms (title, description, createdAt) VALUES (?, ?, ?) RETURNING id`,
			f.Title, f.Description, f.CreatedAt).Scan(&f.ID)
		if err != nil {
			return fmt.Errorf("insert form: %w", err)
		}
		return insertCategories(ctx, tx, f.ID, in.Categories)
	})
	return f, err
}

// UpdateForm replaces title, description, categories and fields of a form as one unit,
// keeping its id, createdAt and responses; the values of the old fields go with them.
func (s *Store) UpdateForm(ctx context.Context, id int64, in FormInput) (Form, error) {
	f := Form{ID: id, Title: in.Title, Description: in.Description}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		// Every field is replaced, so every value of the form goes, by hand (migrations/1.sql
		// says why it is no cascade); the categories take their fields with them.
		_, err := tx.ExecContext(ctx, `DELETE FROM response_values
			  WHERE responseId IN (SELECT id FROM responses WHERE formId = ?)`, id)
		if err != nil {
			return fmt.Errorf("delete the old values: %w", err)
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM categories WHERE formId = ?`, id)
		if err != nil {
			return fmt.Errorf("delete the old fields: %w", err)
		}
		err = tx.QueryRowContext(ctx,
			`UPDATE forms SET title = ?, description = ? WHERE id = ? RETURNING createdAt`,
			f.Title, f.Description, id).Scan(&f.CreatedAt)
		if err != nil {
			return queryError("update form", err)
		}
		return insertCategories(ctx, tx, id, in.Categories)
	})
	s.forms.drop(id) // after the commit: see formCache
	return f, err
}

// insertCategories checks and inserts categories and fields, their sortOrder the array
// order, up to the first that breaks a rule: its error rolls the caller's transaction back.
func insertCategories(ctx context.Context, tx *sql.Tx, formID int64, cats []CategoryInput) error {
	for ci, c := range cats {
		if err := checkCategory(c); err != nil {
			return err
		}
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
			_, err = tx.ExecContext(ctx,
				`INSERT INTO fields (categoryId, label, type, description, sortOrder)
				 VALUES (?, ?, ?, nullif(?, ''), ?)`, catID, *fd.Label, typ, fd.Description, fi)
			if err != nil {
				return fmt.Errorf("insert field: %w", err)
			}
		}
	}
	return nil
}

// DeleteForm removes a form; the schema's cascades remove everything that belongs to it.
func (s *Store) DeleteForm(ctx context.Context, id int64) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `DELETE FROM forms WHERE id = ? RETURNING id`, id).Scan(&id)
		return queryError("delete form", err)
	})
	s.forms.drop(id) // after the commit: see formCache
	return err
}

// CreateResponse stores a response to a form with the values (String(value) by field id,
// nil for null) of the form's own fields; other ids are skipped. ErrNotFound when the
// form does not exist. SQLite joins the values, one JSON parameter read with json_each,
// with the form's fields; CROSS JOIN fixes the loop order, each value looking its field
// up by primary key, where the planner would read the JSON again for every field.
func (s *Store) CreateResponse(ctx context.Context, formID int64, values map[int64]*string) (int64, error) {
	valuesJSON, _ := json.Marshal(values) // int64 keys and *string values always encode
	var responseID int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		// Not RETURNING, which SQLite runs as a costlier plan for an INSERT … SELECT.
		res, err := tx.ExecContext(ctx,
			`INSERT INTO responses (formId, submittedAt) SELECT id, ? FROM forms WHERE id = ?`,
			timestamp(s.now()), formID)
		if err != nil {
			return fmt.Errorf("insert response: %w", err)
		}
		// go-sqlite3 keeps both counts of the statement it ran: they never fail.
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotFound
		}
		responseID, _ = res.LastInsertId()
		_, err = tx.ExecContext(ctx,
			`INSERT INTO response_values (responseId, fieldId, value)
			 SELECT ?, d.id, v.value
			   FROM json_each(?) v
			  CROSS JOIN fields d ON d.id = CAST(v.key AS INTEGER)
			  CROSS JOIN categories c ON c.id = d.categoryId
			  WHERE c.formId = ?`,
			responseID, string(valuesJSON), formID)
		if err != nil {
			return fmt.Errorf("insert values: %w", err)
		}
		return nil
	})
	return responseID, err
}

// Response is one listed response with its values in form order.
type Response struct {
	ID          int64
	SubmittedAt string
	Values      []ResponseValue
}

// ResponseValue is one value of a listed response: Position is its field's index in the
// fields given to ListResponses; Value is not Valid for SQL NULL.
type ResponseValue struct {
	Position int
	Value    sql.NullString
}

// ResponseFields returns the title and the fields of a form in form order, as the
// response list and the CSV export show them, or ErrNotFound.
func (s *Store) ResponseFields(ctx context.Context, formID int64) (string, []Field, error) {
	form, err := s.GetForm(ctx, formID)
	if err != nil {
		return "", nil, err
	}
	var fields []Field
	for _, c := range form.Categories {
		fields = append(fields, c.Fields...)
	}
	return form.Title, fields, nil
}

// ListResponses returns a page of a form's responses, newest first, after the cursor, each
// with the values of the given fields in form order (not those of a field since replaced),
// and the next page's cursor, nil after the last; a missing form has no responses. SQLite
// packs a response's values into one text (unpackValues): a row a value cost the list 1.7
// times the time (a cgo call and the driver's allocations for every row).
func (s *Store) ListResponses(ctx context.Context, formID int64, fields []Field, after Cursor) ([]Response, *Cursor, error) {
	position := make(map[int64]int, len(fields)) // by field id
	for i, f := range fields {
		position[f.ID] = i
	}
	rows, err := s.read.QueryContext(ctx,
		`SELECT id, submittedAt,
		        (SELECT group_concat(fieldId || ' ' || ifnull(octet_length(value), -1) || ' ' ||
		                             ifnull(value, ''), '')
		           FROM response_values WHERE responseId = r.id)
		   FROM responses r
		  WHERE formId = ? AND (submittedAt, id) < (?, ?)
		  ORDER BY submittedAt DESC, id DESC LIMIT ?`, formID, after.Time, after.ID, listPageRows)
	if err != nil {
		return nil, nil, fmt.Errorf("list responses: %w", err)
	}
	defer rows.Close()
	list := []Response{}
	size := 0    // bytes of the values read
	cut := false // the page stopped at listPageBytes
	for rows.Next() {
		if size > listPageBytes {
			cut = true
			break
		}
		var r Response
		var packed sql.NullString // NULL for a response without values
		if err := rows.Scan(&r.ID, &r.SubmittedAt, &packed); err != nil {
			return nil, nil, fmt.Errorf("list responses: %w", err)
		}
		var n int
		r.Values, n = unpackValues(packed.String, position)
		size += n
		list = append(list, r)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("list responses: %w", err)
	}
	if !cut && len(list) < listPageRows {
		return list, nil, nil
	}
	last := list[len(list)-1]
	return list, &Cursor{last.SubmittedAt, last.ID}, nil
}

// unpackValues reads a response's values as ListResponses' query packs them, "<field id>
// <bytes> <value>" each, NULL a length of -1, and returns those of the fields that position
// holds, in form order, substrings of packed, and the bytes they hold.
func unpackValues(packed string, position map[int64]int) ([]ResponseValue, int) {
	// A packed value takes 4 bytes at least.
	values := make([]ResponseValue, 0, min(len(position), len(packed)/4))
	size := 0
	for rest := packed; rest != ""; {
		var id, length string
		id, rest, _ = strings.Cut(rest, " ")
		length, rest, _ = strings.Cut(rest, " ")
		fieldID, _ := strconv.ParseInt(id, 10, 64)
		n, _ := strconv.Atoi(length)
		value := sql.NullString{String: rest[:max(n, 0)], Valid: n >= 0}
		rest = rest[len(value.String):]
		if i, ok := position[fieldID]; ok {
			values = append(values, ResponseValue{Position: i, Value: value})
			size += len(value.String)
		}
	}
	slices.SortFunc(values, func(a, b ResponseValue) int { return a.Position - b.Position })
	return values, size
}

// ResponseExport returns what the PDF of a response shows: the form and the response's
// values by field id, or ErrNotFound. The values are read first: they only ever go (with
// their fields), so the pair is what the snapshot of the form's read holds, where the
// other order could pair a form with the values its update deleted.
func (s *Store) ResponseExport(ctx context.Context, responseID int64) (FormDetail, map[int64]*string, error) {
	var formID int64
	var values map[int64]*string
	err := s.read.QueryRowContext(ctx,
		`SELECT formId, (SELECT json_group_object(fieldId, value)
		                   FROM response_values WHERE responseId = r.id)
		   FROM responses r WHERE id = ?`, responseID).Scan(&formID, jsonColumn{&values})
	if err != nil {
		return FormDetail{}, nil, queryError("read response", err)
	}
	form, err := s.GetForm(ctx, formID)
	return form, values, err
}

// Setting returns the value stored under key, or "" when there is none.
func (s *Store) Setting(ctx context.Context, key string) (string, error) {
	var value string
	err := s.read.QueryRowContext(ctx, `SELECT value FROM settings WHERE key = ?`, key).Scan(&value)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("read setting: %w", err)
	}
	return value, nil
}

// PutSetting creates or overwrites the setting key.
func (s *Store) PutSetting(ctx context.Context, key, value string) error {
	return s.exec(ctx, "write setting", `INSERT INTO settings (key, value) VALUES (?, ?)
		 ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value)
}

// Summary is a stored tracker or e-mail summary.
type Summary struct {
	ID int64 `json:"id"`
	DatedSummary
}

// DatedSummary is a summary without its id, as GET /tracker-summary/today sends it.
type DatedSummary struct {
	SummaryDate string `json:"summaryDate"`
	SummaryText string `json:"summaryText"`
	GeneratedAt string `json:"generatedAt"`
}

// summaryKind is the table of one kind of summary. Table names cannot be SQL parameters:
// these two constants are the only text pasted into a query.
type summaryKind string

const (
	trackerSummaries summaryKind = "tracker_summaries"
	emailSummaries   summaryKind = "email_summaries"
)

// SaveTrackerSummary stores the tracker summary of the day starting at date, replacing the
// text and generatedAt of an existing one and keeping its id.
func (s *Store) SaveTrackerSummary(ctx context.Context, date time.Time, text string) error {
	return s.exec(ctx, "save tracker summary",
		`INSERT INTO tracker_summaries (summaryDate, summaryText, generatedAt) VALUES (?, ?, ?)
		 ON CONFLICT (summaryDate) DO UPDATE SET summaryText = excluded.summaryText, generatedAt = excluded.generatedAt`,
		timestamp(date), text, timestamp(s.now()))
}

// AddEmailSummary appends an e-mail summary for the day starting at date.
func (s *Store) AddEmailSummary(ctx context.Context, date time.Time, text string) error {
	return s.exec(ctx, "add email summary",
		`INSERT INTO email_summaries (summaryDate, summaryText, generatedAt) VALUES (?, ?, ?)`,
		timestamp(date), text, timestamp(s.now()))
}

// TrackerSummary returns the tracker summary of the day starting at date, or ErrNotFound.
func (s *Store) TrackerSummary(ctx context.Context, date time.Time) (Summary, error) {
	var sum Summary
	err := s.read.QueryRowContext(ctx,
		`SELECT id, summaryDate, summaryText, generatedAt FROM tracker_summaries WHERE summaryDate = ?`,
		timestamp(date)).Scan(&sum.ID, &sum.SummaryDate, &sum.SummaryText, &sum.GeneratedAt)
	if err != nil {
		return Summary{}, queryError("read tracker summary", err)
	}
	return sum, nil
}

// ListSummaries returns one page of summaries of a kind, newest summaryDate first, and
// the count of all of them, both from one statement, so from one snapshot.
func (s *Store) ListSummaries(ctx context.Context, kind summaryKind, limit, offset int64) ([]Summary, int64, error) {
	var total int64
	var list []Summary
	err := s.read.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM `+string(kind)+`),
		        (SELECT json_group_array(json_object('id', id, 'summaryDate', summaryDate,
		                    'summaryText', summaryText, 'generatedAt', generatedAt)
		                    ORDER BY summaryDate DESC, id DESC)
		           FROM (SELECT * FROM `+string(kind)+`
		                  ORDER BY summaryDate DESC, id DESC LIMIT ? OFFSET ?))`,
		limit, offset).Scan(&total, jsonColumn{&list})
	if err != nil {
		return nil, 0, fmt.Errorf("list summaries: %w", err)
	}
	return list, total, nil
}
