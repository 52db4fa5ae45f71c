package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
)

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
