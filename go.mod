module formsvc

go 1.26.8

require (
	github.com/go-pdf/fpdf v0.9.0
	github.com/mattn/go-sqlite3 v1.14.53
	golang.org/x/image v0.48.0
	golang.org/x/sync v0.25.0
	golang.org/x/text v0.44.0
)
