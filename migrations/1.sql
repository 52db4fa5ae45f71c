-- 1: the schema as it stood before versioning. IF NOT EXISTS lets a database written
-- then (user_version 0, every table present) take this step unchanged.
-- Timestamps are TEXT in toISOString() form (UTC, milliseconds), which sorts in time order.
CREATE TABLE IF NOT EXISTS forms (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    title       TEXT NOT NULL,
    description TEXT,
    createdAt   TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS categories (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    formId    INTEGER NOT NULL REFERENCES forms(id) ON DELETE CASCADE,
    name      TEXT NOT NULL DEFAULT '',
    sortOrder INTEGER NOT NULL
);

-- The CHECK repeats the field-type rule of forms.go, so that no code path can store an
-- unknown type.
CREATE TABLE IF NOT EXISTS fields (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    categoryId  INTEGER NOT NULL REFERENCES categories(id) ON DELETE CASCADE,
    label       TEXT NOT NULL,
    type        TEXT NOT NULL CHECK (type IN ('text', 'number', 'date', 'textarea', 'boolean')),
    description TEXT,
    sortOrder   INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS responses (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    formId      INTEGER NOT NULL REFERENCES forms(id) ON DELETE CASCADE,
    submittedAt TEXT NOT NULL
);

-- fieldId has no foreign key on purpose. A cascade from fields would need an index on
-- fieldId, and that index costs every submit about fifty scattered page writes (one per
-- answered field), where the primary key below only appends. The store keeps the rule
-- itself, inside its transactions: a value is inserted only for a field of the
-- response's form (CreateResponse), and an update, which replaces every field of a form,
-- first deletes every value of the form's responses (UpdateForm).
CREATE TABLE IF NOT EXISTS response_values (
    responseId INTEGER NOT NULL REFERENCES responses(id) ON DELETE CASCADE,
    fieldId    INTEGER NOT NULL,
    value      TEXT,
    PRIMARY KEY (responseId, fieldId)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- One tracker summary per local day: summaryDate is that day's local midnight.
CREATE TABLE IF NOT EXISTS tracker_summaries (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    summaryDate TEXT NOT NULL UNIQUE,
    summaryText TEXT NOT NULL,
    generatedAt TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS email_summaries (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    summaryDate TEXT NOT NULL,
    summaryText TEXT NOT NULL,
    generatedAt TEXT NOT NULL
);

CREATE INDEX IF NOT EXISTS categories_form ON categories(formId, sortOrder);
CREATE INDEX IF NOT EXISTS fields_category ON fields(categoryId, sortOrder);
CREATE INDEX IF NOT EXISTS responses_form ON responses(formId, submittedAt);
CREATE INDEX IF NOT EXISTS email_summaries_date ON email_summaries(summaryDate);
