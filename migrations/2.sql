-- 2: the forms list pages newest first by (createdAt, id), the response list by
-- (submittedAt, id): an index each finds a page without sorting the table. (SQLite ends
-- every index with the rowid, id: the response index was rebuilt only to name it.)
CREATE INDEX forms_created ON forms(createdAt, id);
DROP INDEX responses_form;
CREATE INDEX responses_form ON responses(formId, submittedAt, id);
