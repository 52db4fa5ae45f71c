package main

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mattn/go-sqlite3"
)

// TestMigrateKeepsExistingDatabase opens a forms.db written by the service before its
// schema was versioned (testdata/forms-before-migrations.db: two forms, three responses,
// two settings, a tracker and two e-mail summaries, written through that version's API and
// store) and finds every row after the upgrade, at the current schema version.
func TestMigrateKeepsExistingDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "forms.db")
	copyFile(t, "testdata/forms-before-migrations.db", path)
	store := openStore(t, path)
	e := &testEnv{t: t, store: store}
	t.Cleanup(func() { store.Close() })

	var version int
	if err := store.read.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil || version != len(migrations) {
		t.Errorf("user_version = %d (%v), want %d", version, err, len(migrations))
	}
	const want = `1|Site inspection|Yearly|2026-11-26T01:23:11.025Z|
2|Empty form|<null>|2026-11-26T01:23:11.027Z|
1|1|General|0|
2|1||1|
1|1|Inspector|text|Full name|0|
2|1|Visited|date|<null>|1|
3|1|Notes|textarea|<null>|2|
4|2|Passed|boolean|<null>|0|
5|2|Score|number|<null>|1|
1|1|2026-11-26T01:23:11.029Z|
2|1|2026-11-26T01:23:11.029Z|
3|2|2026-11-26T01:23:11.029Z|
1|1|Ada|
1|2|2026-11-25|
1|3|All fine
really|
1|4|true|
1|5|1.5|
2|1|Жанна|
2|4|<null>|
empty||
theme|dark|
categories|2|
email_summaries|2|
fields|5|
forms|2|
responses|3|
tracker_summaries|1|
`
	if got := e.snapshot(); got != want {
		t.Errorf("after the upgrade:\n%s\nwant:\n%s", got, want)
	}
	sum, err := store.TrackerSummary(context.Background(), time.Date(2026, 11, 24, 23, 0, 0, 0, time.UTC))
	if err != nil || sum.SummaryText != "Tracker text" {
		t.Errorf("tracker summary = %+v, %v", sum, err)
	}
	list, total, err := store.ListSummaries(context.Background(), emailSummaries, 10, 0)
	if err != nil || total != 2 || len(list) != 2 || list[0].SummaryText != "Mail text 2" || list[1].SummaryText != "Mail text 1" {
		t.Errorf("email summaries = %+v, total %d, %v", list, total, err)
	}
}

// TestMigrateRefusesNewerSchema: a database from a later version of the service is not
// opened by an older one, which would not know its tables.
func TestMigrateRefusesNewerSchema(t *testing.T) {
	for _, tc := range []struct {
		version int
		journal string // the refused database's journal mode: a backup's is delete
	}{{len(migrations) + 1, "wal"}, {999, "wal"}, {len(migrations) + 1, "delete"}} {
		version, path := tc.version, filepath.Join(t.TempDir(), "forms.db")
		openStore(t, path).Close()
		db, _ := sql.Open("sqlite3", path) // fails only for a driver not registered
		_, err := db.Exec(fmt.Sprintf(`PRAGMA user_version = %d`, version))
		var mode string
		err = cmp.Or(err, db.QueryRow(`PRAGMA journal_mode = `+tc.journal).Scan(&mode))
		if err != nil || mode != tc.journal {
			t.Fatalf("user_version %d, journal_mode %q: %v", version, mode, err)
		}
		db.Close()
		before, _ := os.ReadFile(path) // a failure fails the comparison below
		// The error says why, for the operator whose service will not start.
		why := fmt.Sprintf("database schema version %d is newer than this program's %d",
			version, len(migrations))
		s, err := OpenStore(context.Background(), path, time.Now)
		if err == nil {
			s.Close()
		}
		if err == nil || err.Error() != why {
			t.Errorf("OpenStore of a schema version %d database: %v, want %q", version, err, why)
		}
		// Refused without a write: the file is as the newer program left it, and no
		// commit waits in a WAL to be checkpointed into it.
		if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, before) {
			t.Errorf("schema version %d: the refused database changed (%v)", version, err)
		}
		if wal, err := os.Stat(path + "-wal"); err == nil && wal.Size() > 0 {
			t.Errorf("schema version %d: the refused open left a WAL of %d bytes", version, wal.Size())
		}
	}
}

// TestMigrationFailureRefused: a file that is not a database, and a database a migration
// cannot apply to (another program's, with a forms table of its own, which step 1's IF NOT
// EXISTS passes), are refused, saying why, and left as they were.
func TestMigrationFailureRefused(t *testing.T) {
	notes := filepath.Join(t.TempDir(), "notes.txt")
	writeFile(t, notes, "not a database")
	s, err := OpenStore(context.Background(), notes, time.Now)
	if want := "read schema version: file is not a database"; s != nil || err == nil || err.Error() != want {
		t.Errorf("OpenStore(a text file) = %v, %v; want no store and %q", s, err, want)
	}
	if b, err := os.ReadFile(notes); string(b) != "not a database" {
		t.Errorf("the text file now holds %q (%v)", b, err)
	}
	path := filepath.Join(t.TempDir(), "foreign.db")
	db, _ := sql.Open("sqlite3", path) // fails only for a driver not registered
	if _, err := db.Exec(`CREATE TABLE forms (x)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, err = OpenStore(context.Background(), path, time.Now)
	if want := "migrate to schema version 2: no such column: createdAt"; s != nil || err == nil || err.Error() != want {
		t.Errorf("OpenStore = %v, %v; want no store and %q", s, err, want)
	}
	db = openReadOnly(path)
	defer db.Close()
	var version, tables int
	err = db.QueryRow(`SELECT (SELECT user_version FROM pragma_user_version), count(*) FROM sqlite_schema`).Scan(&version, &tables)
	if err != nil || version != 0 || tables != 1 {
		t.Errorf("the refused database: version %d, %d tables (%v); want 0 and its one table", version, tables, err)
	}
}

// TestOpenStorePaths: '?' and '#' would start the query or fragment of the file: URI
// the driver is given, so a path with them is refused rather than opening another file;
// any other character a file name may hold is taken, under a relative path and one
// starting with //, by the service's opens and the backup's read-only ones. The folder
// then holds the database and SQLite's WAL files only (the check that it can be written
// leaves nothing).
func TestOpenStorePaths(t *testing.T) {
	root := t.TempDir()
	t.Chdir(root)
	for i, name := range []string{"a?b.db", "a#b.db", "Forms X&y=1 %41;!.db", "ü.db"} {
		dir := fmt.Sprintf("%d %%3F:b", i) // relative, or from // for odd i
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			dir = "/" + filepath.Join(root, dir)
		}
		path := dir + "/" + name
		s, err := OpenStore(context.Background(), path, time.Now)
		if refuse := strings.ContainsAny(name, "?#"); refuse != (err != nil) {
			t.Errorf("OpenStore(%q) = %v, want refused %v", path, err, refuse)
		}
		if err != nil {
			continue
		}
		entries, err := os.ReadDir(dir)
		if err != nil || len(entries) == 0 || entries[0].Name() != name {
			t.Errorf("OpenStore(%q) made no file of that name: %v %v", path, entries, err)
		}
		for _, e := range entries {
			if !slices.Contains([]string{name, name + "-wal", name + "-shm"}, e.Name()) {
				t.Errorf("OpenStore left %s in the database folder", e.Name())
			}
		}
		s.Close()
		openStore(t, path).Close() // reads the version of an existing file
		if _, err := Backup(context.Background(), path, fmt.Sprint("backup", i, ".db")); err != nil {
			t.Errorf("Backup(%q): %v", path, err)
		}
	}
}

// TestResponseExportOwnValues: the export of a response carries its own values, not
// those of a later response to the same form.
func TestResponseExportOwnValues(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	f := e.createForm(fullForm())
	first := e.submit(f.ID, map[string]any{"1": "first"})
	e.submit(f.ID, map[string]any{"1": "second"})
	_, values, err := e.store.ResponseExport(context.Background(), first)
	if err != nil || len(values) != 1 || show(values[1]) != `"first"` {
		t.Errorf("ResponseExport(first) = %v (%v), want only field 1 = first", values, err)
	}
}

// TestEmailSummariesSameDay: several e-mail summaries of one day are listed newest first.
func TestEmailSummariesSameDay(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	day := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	for _, text := range []string{"one", "two", "three"} {
		if err := e.store.AddEmailSummary(context.Background(), day, text); err != nil {
			t.Fatal(err)
		}
	}
	var page struct {
		Summaries []struct{ SummaryText string }
	}
	e.doJSON("GET", "/api/email-summaries", nil, &page)
	if got := fmt.Sprint(page.Summaries); got != "[{three} {two} {one}]" {
		t.Errorf("same-day summaries = %s, want three, two, one", got)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o666); err != nil {
		t.Fatal(err)
	}
}

// TestWriteFailingAtCommit: a write whose COMMIT fails answers 500 with the cause and
// changes nothing. SQLite fails the COMMIT itself here: a temporary trigger on the write
// connection (the pool's only one) leaves a deferred foreign-key violation, which SQLite
// checks at COMMIT.
func TestWriteFailingAtCommit(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	f := e.createForm(fullForm())
	id := itoa(f.ID)
	values := map[string]any{"values": map[string]any{itoa(f.Categories[0].Fields[0].ID): "x"}}
	e.exec(`CREATE TEMP TABLE commit_parent (id INTEGER PRIMARY KEY);
		CREATE TEMP TABLE commit_child (parent INTEGER REFERENCES commit_parent (id)
			DEFERRABLE INITIALLY DEFERRED)`)
	for _, tc := range []struct {
		event, method, path string
		body                any
		want                string
		status              int // once the trigger is gone
	}{
		{"INSERT ON main.forms", "POST", "/api/forms", fullForm(), "Failed to create form: ", 201},
		{"UPDATE ON main.forms", "PUT", "/api/forms/" + id, fullForm(), "Failed to update form " + id + ": ", 200},
		{"INSERT ON main.responses", "POST", "/api/forms/" + id + "/responses", values, "Failed to submit response for form " + id + ": ", 201},
		{"INSERT ON main.settings", "PUT", "/api/settings/k", map[string]any{"value": "v"}, "Failed to update setting 'k': ", 200},
		{"DELETE ON main.forms", "DELETE", "/api/forms/" + id, nil, "Failed to delete form " + id + ": ", 200},
	} {
		e.exec(`CREATE TEMP TRIGGER fail_commit AFTER ` + tc.event +
			` BEGIN INSERT INTO commit_child VALUES (-1); END`)
		before := e.snapshot()
		e.wantError(tc.method, tc.path, tc.body, 500, tc.want+"internal error")
		if e.snapshot() != before {
			t.Errorf("%s %s failing at commit changed the database", tc.method, tc.path)
		}
		if !strings.Contains(e.logs.String(), "FOREIGN KEY constraint failed") {
			t.Errorf("%s %s failing at commit: the log does not say why:\n%s", tc.method, tc.path, e.logs)
		}
		e.exec(`DROP TRIGGER temp.fail_commit`)
		if status, raw := e.do(tc.method, tc.path, tc.body); status != tc.status {
			t.Errorf("%s %s after the failure = %d %s, want %d", tc.method, tc.path, status, raw, tc.status)
		}
	}
}

// TestBackup: a backup of a database left with commits in its WAL (a crashed service)
// holds them, and reads its source read-only: the file and its WAL stay as they were,
// where a read-write connection closing would checkpoint them; the copy is the one file it
// leaves. A destination that exists, a database that does not, a file that is none and a
// folder that cannot be written are each an error, the whole message with its cause for
// the operator, that leaves nothing behind and changes nothing.
func TestBackup(t *testing.T) {
	ctx := context.Background()
	live := filepath.Join(t.TempDir(), "forms.db")
	store := openStore(t, live)
	defer store.Close()
	if err := store.PutSetting(ctx, "k", "in the WAL"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "forms.db") // the files as kill -9 leaves them
	for _, suffix := range []string{"", "-wal", "-shm"} {
		copyFile(t, live+suffix, path+suffix)
	}
	before, _ := os.ReadFile(path)
	dest := filepath.Join(dir, "backup.db")
	size, err := Backup(ctx, path, dest)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(path)
	wal, err := os.Stat(path + "-wal")
	if changed := !bytes.Equal(before, after); changed || err != nil || wal.Size() == 0 {
		t.Errorf("the backup wrote to its source: file changed %v, WAL %v %v", changed, wal, err)
	}
	if info, err := os.Stat(dest); err != nil || info.Size() != size || size == 0 {
		t.Errorf("backup reported %d bytes; the file: %v %v", size, info, err)
	}
	if names := listDir(t, dir); len(names) != 1 || !strings.HasPrefix(names[0], "backup.db ") {
		t.Errorf("beside the database, the backup left %q, want only backup.db", names)
	}
	copied := openStore(t, dest)
	if v, err := copied.Setting(ctx, "k"); err != nil || v != "in the WAL" {
		t.Errorf("the copy's setting = %q, %v; want the WAL's commit", v, err)
	}
	copied.Close()

	writeFile(t, filepath.Join(dir, "taken.db"), "not to be replaced")
	writeFile(t, filepath.Join(dir, "notes.txt"), "a text file given for the database")
	for _, tc := range []struct {
		path, dest, want string // want: a regular expression, @ the folder
	}{
		{"forms.db", "taken.db", `@/taken\.db already exists; a backup never replaces a file`},
		{"missing.db", "b.db", `no database to back up: stat @/missing\.db: no such file or directory`},
		{"notes.txt", "b.db", `copy database: file is not a database`},
		// The copy is written under a hidden temporary name beside dest.
		{"forms.db", "none/b.db",
			`backup destination: open @/none/\.b\.db\.tmp-\d+: no such file or directory`},
	} {
		before := listDir(t, dir)
		_, err := Backup(ctx, filepath.Join(dir, tc.path), filepath.Join(dir, tc.dest))
		want := "^" + strings.ReplaceAll(tc.want, "@", regexp.QuoteMeta(dir)) + "$"
		if err == nil || !regexp.MustCompile(want).MatchString(err.Error()) {
			t.Errorf("Backup(%s, %s) = %v, want %s", tc.path, tc.dest, err, want)
		}
		if after := listDir(t, dir); !slices.Equal(after, before) {
			t.Errorf("Backup(%s, %s): the folder held %q, now %q", tc.path, tc.dest, before, after)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "taken.db")); string(data) != "not to be replaced" {
		t.Errorf("an existing destination was written: %q", data)
	}
}

// listDir is the names and sizes of the files in dir, for comparing before and after.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(e.Name(), "forms.db") { // the live database's own files change as it runs
			names = append(names, fmt.Sprintf("%s %d", e.Name(), info.Size()))
		}
	}
	return names
}

// TestFormCacheGeneration: a form read before a write dropped it (its generation is
// older) is not put back, so the next read goes to the database; one read after is kept.
func TestFormCacheGeneration(t *testing.T) {
	t.Parallel()
	c := formCache{maxBytes: formCacheBytes}
	_, gen, _ := c.get(7) // a read begins and misses
	c.drop(7)             // an update commits meanwhile
	// The read ends with what it read before the commit.
	c.put(7, gen, FormDetail{Form: Form{ID: 7, Title: "old"}})
	if f, _, ok := c.get(7); ok {
		t.Fatalf("a read older than the update put back %q", f.Title)
	}
	_, gen, _ = c.get(7)
	c.put(7, gen, FormDetail{Form: Form{ID: 7, Title: "new"}})
	if f, _, ok := c.get(7); !ok || f.Title != "new" {
		t.Errorf("a read after the update was not kept: %q, %v", f.Title, ok)
	}
}

// TestFormCacheBounded: the cache keeps no more than its byte bound, however many forms
// are read, and serves what it keeps.
func TestFormCacheBounded(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.store.forms.maxBytes = 20_000
	for range 40 {
		e.createForm(fullForm()) // each read once
	}
	c := &e.store.forms
	c.mu.Lock()
	bytes, kept := c.bytes, len(c.forms)
	sum := 0
	for _, f := range c.forms {
		sum += formSize(f)
	}
	c.mu.Unlock()
	if bytes > 20_000 || bytes != sum || kept == 0 || kept == 40 {
		t.Errorf("cache holds %d forms, %d bytes (sum %d), bound 20000", kept, bytes, sum)
	}
	for id := int64(1); id <= 40; id++ {
		var got FormDetail
		if e.doJSON("GET", "/api/forms/"+itoa(id), nil, &got) != 200 || got.ID != id {
			t.Errorf("form %d read back as %d", id, got.ID)
		}
	}
}

// TestCheckCopyFindsCorruption: a copy that SQLite opens but whose integrity_check fails
// (an index entry changed: "row 1 missing from index") is refused, not reported written.
func TestCheckCopyFindsCorruption(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	db, _ := sql.Open("sqlite3", path) // fails only for a driver not registered
	for _, stmt := range []string{`PRAGMA journal_mode = delete`, `CREATE TABLE t(x TEXT)`, `CREATE INDEX tx ON t(x)`, `INSERT INTO t VALUES ('hello')`} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	data, _ := os.ReadFile(path) // a failure leaves no page to change, which fails below
	const pageSize = 4096
	changed := false
	for page := pageSize; page < len(data) && !changed; page += pageSize {
		if data[page] != 0x0a { // an index b-tree leaf page (SQLite's file format, 1.6)
			continue
		}
		if i := bytes.Index(data[page:page+pageSize], []byte("hello")); i >= 0 {
			data[page+i+4] = 'p' // the index now holds "hellp"
			changed = true
		}
	}
	if !changed {
		t.Fatal("no index leaf page holds the key")
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := checkCopy(context.Background(), path); err == nil || !strings.Contains(err.Error(), "integrity_check says") {
		t.Errorf("checkCopy of a corrupt index = %v, want integrity_check's finding", err)
	}
}

// TestListResponsesPage: a value of a field not among those given (the form was replaced
// after they were read) is left out of the list; a row of a page that fails to read (here
// past SQLite's length limit, lowered on the one read connection) fails the page: it is
// not its end.
func TestListResponsesPage(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	ctx := context.Background()
	f := e.createForm(fullForm())
	_, fields, err := e.store.ResponseFields(ctx, f.ID)
	if err != nil {
		t.Fatal(err)
	}
	e.wantReply("PUT", "/api/forms/"+itoa(f.ID), fullForm(), 200,
		`{"id":1,"title":"Site inspection","description":"Yearly check"}`)
	field := "6" // the replaced form's first field
	e.submit(f.ID, map[string]any{field: "new"})
	page, _, err := e.store.ListResponses(ctx, f.ID, fields, listStart())
	if err != nil || len(page) != 1 || len(page[0].Values) != 0 {
		t.Errorf("ListResponses with the old fields = %+v, %v; want one response, no values",
			page, err)
	}

	e.submit(f.ID, map[string]any{field: strings.Repeat("v", 2000)})
	e.submit(f.ID, map[string]any{field: "short"}) // newer: the page's first row reads well
	e.store.read.SetMaxOpenConns(1)
	conn, err := e.store.read.Conn(ctx)
	if err == nil {
		err = conn.Raw(func(c any) error {
			c.(*sqlite3.SQLiteConn).SetLimit(sqlite3.SQLITE_LIMIT_LENGTH, 1000)
			return nil
		})
		conn.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	page, next, err := e.store.ListResponses(ctx, f.ID, fields, listStart())
	if err == nil || !strings.Contains(err.Error(), "too big") {
		t.Errorf("ListResponses = %d responses, next %v, error %v; want the second row's error",
			len(page), next, err)
	}
}

// TestStoreNamesTheFailedStep: a statement the database refuses (a trigger raising an
// error stands in for it) fails the write with the step's name, which the log then shows,
// leaves the database as it was and ends its transaction at once: one left open holds its
// connection, the write pool's only one, until its context ends.
func TestStoreNamesTheFailedStep(t *testing.T) {
	t.Parallel()
	in := FormInput{Title: "new", Categories: []CategoryInput{{Name: "c", Fields: []FieldInput{
		{Label: ptr("l"), Type: "text", TypeIsString: true}}}}}
	write := func(ctx context.Context, s *Store, f FormDetail, op string) (err error) {
		switch op {
		case "create":
			_, err = s.CreateForm(ctx, in)
		case "update":
			_, err = s.UpdateForm(ctx, f.ID, in)
		case "submit":
			values := map[int64]*string{f.Categories[0].Fields[0].ID: ptr("x")}
			_, err = s.CreateResponse(ctx, f.ID, values)
		case "setting":
			err = s.PutSetting(ctx, "k", "v")
		case "tracker":
			err = s.SaveTrackerSummary(ctx, startOfDay(time.Now()), "t")
		case "email":
			err = s.AddEmailSummary(ctx, startOfDay(time.Now()), "t")
		}
		return err
	}
	for _, tc := range []struct{ trigger, want, write string }{
		{"BEFORE DELETE ON response_values", "delete the old values: ", "update"},
		{"BEFORE DELETE ON categories", "delete the old fields: ", "update"},
		{"BEFORE UPDATE ON forms", "update form: ", "update"},
		{"BEFORE INSERT ON categories", "insert category: ", "update"},
		{"BEFORE INSERT ON fields", "insert field: ", "update"},
		{"BEFORE INSERT ON forms", "insert form: ", "create"},
		{"BEFORE INSERT ON responses", "insert response: ", "submit"},
		{"BEFORE INSERT ON response_values", "insert values: ", "submit"},
		{"BEFORE INSERT ON settings", "write setting: ", "setting"},
		{"BEFORE INSERT ON tracker_summaries", "save tracker summary: ", "tracker"},
		{"BEFORE INSERT ON email_summaries", "add email summary: ", "email"},
	} {
		e := newTestEnv(t)
		f := e.createForm(fullForm())
		e.submit(f.ID, map[string]any{itoa(f.Categories[0].Fields[0].ID): "v"})
		e.exec(`CREATE TRIGGER refuse ` + tc.trigger + ` BEGIN SELECT RAISE(ABORT, 'refused'); END`)
		before := e.snapshot()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := write(ctx, e.store, f, tc.write)
		if ctx.Err() != nil {
			t.Fatalf("%s: the failed write returned only when its context ended: its transaction "+
				"was left open", tc.trigger)
		}
		cancel()
		if err == nil || err.Error() != tc.want+"refused" {
			t.Errorf("%s: write = %v, want %q", tc.trigger, err, tc.want+"refused")
		}
		if after := e.snapshot(); after != before {
			t.Errorf("%s: the failed write changed the database:\n%s\nwant\n%s",
				tc.trigger, after, before)
		}
	}
}
