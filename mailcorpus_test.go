package main

import (
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// mailCorpora are real-world messages from packages that .ci/run installs: CPython's
// e-mail test messages (libpython3.11-testsuite), a corpus of real bounce reports
// (python3-flufl.bounce), enmime's messages from real mailers, malformed ones among them
// (golang-github-jhillyerd-enmime-dev), and wildduck's IMAP fixtures (npm's wildduck
// 1.46.1, unpacked by .ci/run into the user's cache folder).
var mailCorpora = []struct{ pkg, glob string }{
	{"libpython3.11-testsuite", "/usr/lib/python3.11/test/test_email/data/msg_*.txt"},
	{"python3-flufl.bounce", "/usr/lib/python3/dist-packages/flufl/bounce/tests/data/*.txt"},
	{"golang-github-jhillyerd-enmime-dev", "/usr/share/gocode/src/github.com/jhillyerd/enmime/testdata/mail/*.raw"},
	{"golang-github-jhillyerd-enmime-dev", "/usr/share/gocode/src/github.com/jhillyerd/enmime/testdata/low-quality/*.raw"},
	{"wildduck@1.46.1 (npm pack, unpacked into $XDG_CACHE_HOME/formsvc-wildduck)", filepath.Join(cacheDir, "formsvc-wildduck/package/imap-core/test/fixtures/*.eml")},
}

// cacheDir is where .ci/run unpacks npm packages: $XDG_CACHE_HOME, else ~/.cache; without a
// home, "" and that corpus is reported missing.
var cacheDir, _ = os.UserCacheDir()

// pythonReader is the reference reader: Python's email package with policy.default, as a
// mail program shows each message: its Subject and the body get_body(('plain', 'html'))
// picks, decoded.
const pythonReader = `
import email, email.policy, json, sys
out = []
for path in sys.argv[1:]:
    with open(path, 'rb') as f:
        msg = email.message_from_bytes(f.read(), policy=email.policy.default)
    try:
        subject = str(msg['subject'] or '')
    except Exception as e:
        subject = None
    body, kind = '', ''
    part = msg.get_body(('plain', 'html'))
    if part is not None:
        kind = part.get_content_subtype()
        try:
            body = part.get_content()
        except Exception:
            body = None
    out.append({'path': path, 'subject': subject, 'body': body, 'kind': kind})
json.dump(out, sys.stdout)
`

// minSameAsPython is how many messages of the installed corpora (225) were read as
// Python reads them when the reader was last changed: fewer is a regression.
const minSameAsPython = 215

// knownMailDifferences are the corpus messages where this reader and Python's differ on
// purpose, with the reason.
var knownMailDifferences = map[string]string{
	"tests/data/simple_25.txt":                             "an 8-bit body without a charset: Python shows U+FFFD for every byte outside ASCII; here each stays a character, read as windows-1252 (decodeCharset)",
	"tests/data/sina_01.txt":                               "a raw 8-bit GB2312 Subject: Python shows U+FFFD; here it is read in the body's charset, gb2312, as mail programs do",
	"test_email/data/msg_17.txt":                           "a multipart/mixed whose boundary never occurs in the body: Python shows no body; a mail program shows its text",
	"test_email/data/msg_41.txt":                           "a multipart/alternative without a boundary parameter: Python shows no body; a mail program shows its text",
	"test_email/data/msg_25.txt":                           "a multipart/report whose boundary parameter is cut short (bo): Python shows no body; here the delimiter lines of the body split it, and its first text part is the body",
	"test_email/data/msg_31.txt":                           "a multipart whose boundary parameter (BOUNDARY_) is not the body's (BOUNDARY): Python shows no body; here the body's delimiter lines split it",
	"testdata/mail/mime-bad-content-transfer-encoding.raw": "a part declared base64 but written as text: Python joins its lines into one (decode_b of the lines joined); here they stay lines",
	"testdata/mail/non-mime-missing-charset.raw":           "U+0080 written as UTF-8 (C2 80) without a charset: Python shows two U+FFFD; here the C1 control is valid UTF-8, kept, and invisible",
	"test/fixtures/fix3.eml":                               "boundary='...' in single quotes, which Python keeps and so finds no part; a mail program reads it without them, and the text/html part is the body",
	"testdata/low-quality/incorrect-charset.raw":           "UTF-8 labelled us-ascii: Python shows U+FFFD for every byte outside ASCII; here valid UTF-8 is kept (decodeCharset), as mail programs show it",
}

// TestMailCorpusAsPythonReadsIt reads every message of the corpora and compares its
// Subject and body with what Python's email package shows; it skips, saying why, where
// Python or the corpora are absent.
func TestMailCorpusAsPythonReadsIt(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		notInstalled(t, "python3 not installed: no reference reader")
	}
	var files []string
	complete := true // every corpus installed: the count of same readings is known
	for _, c := range mailCorpora {
		found, _ := filepath.Glob(c.glob)
		complete = complete && len(found) > 0
		if len(found) == 0 && os.Getenv("FORMSVC_CI") != "" {
			t.Errorf("no corpus at %s under .ci/run, which installs %s", c.glob, c.pkg)
		} else if len(found) == 0 {
			t.Logf("no corpus at %s: install %s", c.glob, c.pkg)
		}
		files = append(files, found...)
	}
	if len(files) == 0 {
		notInstalled(t, "no mail corpus installed (.ci/run installs libpython3.11-testsuite and python3-flufl.bounce)")
	}
	out, err := exec.Command(python, append([]string{"-c", pythonReader}, files...)...).Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	var want []struct {
		Path, Kind    string
		Subject, Body *string
	}
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	same := 0
	for _, w := range want {
		raw, err := os.ReadFile(w.Path)
		if err != nil {
			t.Fatal(err)
		}
		got, err := parseEmail(raw, time.Now(), quiet)
		dir := filepath.Dir(w.Path)
		name := filepath.Base(filepath.Dir(dir)) + "/" + filepath.Base(dir) + "/" + filepath.Base(w.Path)
		var diffs []string
		if err != nil {
			diffs = append(diffs, "dropped: "+err.Error())
		} else {
			if w.Subject != nil && comparable(got.Subject) != comparable(*w.Subject) {
				diffs = append(diffs, "subject "+quote(got.Subject)+", Python "+quote(*w.Subject))
			}
			if w.Body != nil {
				body := *w.Body
				if w.Kind == "html" {
					body = stripHTML(body)
				}
				if comparable(got.Body) != comparable(body) {
					diffs = append(diffs, "body "+quote(got.Body)+",\n    Python "+quote(body))
				}
			}
		}
		reason, known := knownMailDifferences[name]
		switch {
		case len(diffs) == 0 && known:
			t.Errorf("%s: now read as Python reads it; drop it from knownMailDifferences (%s)", name, reason)
		case len(diffs) == 0:
			same++
		case !known:
			t.Errorf("%s:\n  %s", name, strings.Join(diffs, "\n  "))
		}
	}
	t.Logf("%d of %d messages read as Python reads them, %d known differences", same, len(want), len(knownMailDifferences))
	if complete && same < minSameAsPython {
		t.Errorf("%d messages read as Python reads them, fewer than the %d before", same, minSameAsPython)
	}
}

var (
	blanks   = regexp.MustCompile(`\s+`)
	lostRuns = regexp.MustCompile("\uFFFD+")
)

// comparable is a text as both readers' outputs are compared: blanks as one space, a run
// of U+FFFD as one (Python replaces a bad sequence, Go each byte), the first 3,000
// characters (the body is cut at 4,000, before blanks are folded).
func comparable(s string) string {
	s = blanks.ReplaceAllString(s, " ")
	s = lostRuns.ReplaceAllString(s, "\uFFFD")
	return cutText(strings.TrimSpace(s), 3000)
}

func quote(s string) string {
	b, _ := json.Marshal(cutText(s, 300))
	return string(b)
}
