#!/usr/bin/env python3
"""Write the Maildir fixtures with Python's email and mailbox modules.

testdata/maildir: the summary tests' mailbox. Messages of the window in the encodings mail
programs use (RFC 2047 words in UTF-8 and ISO-8859-1, 8bit, quoted-printable and base64
bodies, multipart/alternative, an HTML-only message with an attachment), one delivered
and dated before the window, one without a Date, and one file that is not a message at all.

testdata/maildir-charsets: one message per charset a mail program writes. Each message has its sender's name and its subject RFC 2047-encoded in its charset and a
text/plain body in that charset, with the Content-Transfer-Encoding Python's email package
picks for it (base64, quoted-printable or 7bit). Beside the Maildir,
maildir-charsets.json holds what the service must hand the model for each message, in
UTF-8, newest first as in $EMAILS. The Go tests read only the output, so they do not need Python.

Run from the repository root:  python3 testdata/make_maildir.py
Re-running it writes the same files: delivery times and file names are fixed.
"""

import datetime
import email.charset
import email.policy
from email.message import EmailMessage
from email.mime.application import MIMEApplication
from email.mime.multipart import MIMEMultipart
from email.mime.text import MIMEText
import email.header
import email.message
import email.utils
import json
import mailbox
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "maildir-charsets")
FIXTURES = os.path.join(HERE, "maildir")

# (charset, sender name, subject, body, Date as UTC, the sender's UTC offset in hours, subfolder)
MESSAGES = [
    ("windows-1252", "Zoë O’Brien",
     "Re: “Budget 2027” – 1.250 € approved",
     "Hi all,\n\nthe “Q4 budget” – 12.500 € in total – was approved on Monday.\n"
     "Naïve estimates aside, we’re on track… Thanks, Zoë",
     "2026-11-25T09:10:00", -5, "new"),
    ("koi8-r", "Пётр Иванов",
     "Отчёт о выпуске версии 2.1",
     "Сборка прошла успешно, все тесты зелёные.\nЗавтра утром выпускаем версию 2.1.",
     "2026-11-25T08:20:00", 3, "cur"),
    ("iso-2022-jp", "山田太郎",
     "明日の会議について",
     "明日の会議は午後三時に始まります。\n資料を準備してください。よろしくお願いします。",
     "2026-11-25T07:30:00", 9, "new"),
    ("gb2312", "王小明",
     "服务器维护通知",
     "本周六晚上十点将进行服务器维护，预计持续两个小时。\n维护期间系统无法访问。",
     "2026-11-24T16:40:00", 8, "cur"),
    ("big5", "陳大文",
     "第三季度銷售報告",
     "第三季度的銷售額比去年同期增長了百分之十二。\n詳細數據請見附件。",
     "2026-11-24T12:50:00", 8, "new"),
    ("euc-kr", "김민수",
     "주간 회의 안내",
     "다음 주 월요일 오전 열 시에 주간 회의가 있습니다.\n모두 참석해 주세요.",
     "2026-11-24T09:00:00", 9, "cur"),
    ("iso-8859-2", "Łukasz Żółkiewski",
     "Zażółć gęślą jaźń: spotkanie w środę",
     "Dzień dobry,\n\nspotkanie odbędzie się w środę o godzinie dziesiątej.\n"
     "Proszę przynieść notatki. Pozdrawiam, Łukasz",
     "2026-11-23T10:00:00", 1, "new"),
]


def deliver(box, root, msg, name):
    """Adds msg to box and renames its file to name (subfolder/seconds.M<n>P1.host[:2,S]),
    so that the files are the same at every run."""
    md = mailbox.MaildirMessage(msg)
    sub = name.split("/")[0]
    md.set_subdir(sub)
    if sub == "cur":
        md.set_flags("S")
    key = box.add(md)
    os.rename(os.path.join(root, box._lookup(key)), os.path.join(root, name))


def header_message(sender, subject, date):
    """A message (the classic API, which encodes headers in the charset given) with
    From, To, Subject and Date set."""
    msg = email.message.Message()
    msg["From"] = sender
    msg["To"] = "team@example.com"
    msg["Subject"] = subject
    if date:
        msg["Date"] = date
    return msg


def write_fixtures():
    shutil.rmtree(FIXTURES, ignore_errors=True)
    box = mailbox.Maildir(FIXTURES, create=True)

    # RFC 2047 words in UTF-8, a body in 8bit UTF-8 (the modern API).
    m = EmailMessage(policy=email.policy.SMTP)
    m["From"] = "Jörg Müller <joerg@example.com>"
    m["To"] = "team@example.com"
    m["Subject"] = "Grüße aus Köln"
    m["Date"] = "Tue, 24 Nov 2026 09:15:00 +0100"
    m.set_content("Hallo zusammen, die Straße ist gesperrt.\n", charset="utf-8", cte="8bit")
    deliver(box, FIXTURES, m, "new/1795508160.M1P1.host")

    # ISO-8859-1: a quoted-printable subject and body, the body long enough to be folded.
    m = header_message("Claire <claire@example.fr>", email.header.Header("Café crème", "iso-8859-1"),
                       "Mon, 23 Nov 2026 14:00:00 +0100")
    m["MIME-Version"] = "1.0"
    m.set_payload("Un café crème, s'il vous plaît. Cette ligne est très longue et continue ici, "
                  "bien au-delà de soixante-seize caractères.\n", "iso-8859-1")
    deliver(box, FIXTURES, m, "cur/1795438860.M2P1.host:2,S")

    # A base64 UTF-8 body (Python's default for UTF-8).
    m = header_message("Ivan <ivan@example.ru>", "Status", "Wed, 25 Nov 2026 08:00:00 +0000")
    m["MIME-Version"] = "1.0"
    m.set_payload("Привет, мир.\nВторая строка.\n", "utf-8")
    deliver(box, FIXTURES, m, "cur/1795593660.M3P1.host:2,S")

    # multipart/alternative, plain text first.
    m = MIMEMultipart("alternative", boundary="b1")
    for name, value in [("From", "Ops <ops@example.com>"), ("To", "team@example.com"),
                        ("Subject", "Deploy finished"), ("Date", "Tue, 24 Nov 2026 18:30:00 -0500")]:
        m[name] = value
    m.attach(MIMEText("Deploy 42 finished without errors.\n", "plain", "us-ascii"))
    m.attach(MIMEText("<p>Deploy <b>42</b> finished <i>without</i> errors.</p>\n", "html", "us-ascii"))
    deliver(box, FIXTURES, m, "new/1795563060.M4P1.host")

    # HTML only, quoted-printable, beside a PDF attachment.
    m = MIMEMultipart("mixed", boundary="outer")
    for name, value in [("From", "Newsletter <news@example.com>"), ("To", "team@example.com"),
                        ("Subject", "HTML only"), ("Date", "Wed, 25 Nov 2026 07:00:00 +0100")]:
        m[name] = value
    qp = email.charset.Charset("utf-8")
    qp.body_encoding = email.charset.QP
    html = email.message.Message()
    html.set_payload("<html><head><style>p {color: red}</style></head><body><p>Café &amp; tea<br>"
                     "on Friday</p><script>alert(1)</script></body></html>\n", qp)
    html.set_type("text/html")
    m.attach(html)
    m.attach(MIMEApplication(b"%PDF-1.4\n", "pdf", name="a.pdf"))
    deliver(box, FIXTURES, m, "new/1795586460.M5P1.host")

    # Delivered and dated before every window of the tests.
    m = header_message("Old <old@example.com>", "Too old", "Fri, 20 Nov 2026 12:00:00 +0100")
    m.set_payload("Outside the window.\n")
    deliver(box, FIXTURES, m, "cur/1795521600.M6P1.host:2,S")

    # Not a message: what a half-written or foreign file in a Maildir looks like. No mail
    # library writes one, so it is written as it is.
    with open(os.path.join(FIXTURES, "new", "1795590000.M7P1.host"), "w") as f:
        f.write("  this is not a message at all\n")

    # No Date header: the message cannot be placed in a window.
    m = email.message.Message()
    m["From"] = "Nodate <nodate@example.com>"
    m["Subject"] = "No date"
    m.set_payload("No Date header.\n")
    deliver(box, FIXTURES, m, "new/1795590300.M8P1.host")

    open(os.path.join(FIXTURES, "tmp", ".keep"), "w").close()


def main():
    write_fixtures()
    # Python's own defaults throughout: its RFC 2047 words of GB2312 and Big5 carry its
    # codec names (eucgb2312_cn, big5_tw), as mail sent by Python scripts does.
    shutil.rmtree(OUT, ignore_errors=True)
    box = mailbox.Maildir(OUT, create=True)
    expected = []
    for i, (charset, name, subject, body, date, offset, sub) in enumerate(MESSAGES, 1):
        utc = datetime.datetime.fromisoformat(date).replace(tzinfo=datetime.timezone.utc)
        local = utc.astimezone(datetime.timezone(datetime.timedelta(hours=offset)))
        sender = f"sender{i}@example.com"

        msg = email.message.Message()
        msg["From"] = email.utils.formataddr((name, sender), charset=charset)
        msg["To"] = "team@example.com"
        msg["Subject"] = email.header.Header(subject, charset)
        msg["Date"] = email.utils.format_datetime(local)
        msg["Message-ID"] = f"<charset-{i}@example.com>"
        msg["MIME-Version"] = "1.0"
        msg.set_payload(body, charset=charset)  # picks the transfer encoding

        md = mailbox.MaildirMessage(msg)
        md.set_subdir(sub)
        if sub == "cur":
            md.set_flags("S")
        key = box.add(md)

        # A stable name: delivered a minute after its Date, as a real delivery would be.
        delivered = int(utc.timestamp()) + 60
        old = box._lookup(key)  # the path mailbox chose, relative to OUT
        suffix = ":2,S" if sub == "cur" else ""
        new = os.path.join(sub, f"{delivered}.M{i}P1.charsets{suffix}")
        os.rename(os.path.join(OUT, old), os.path.join(OUT, new))

        expected.append({
            "file": new,
            "charset": charset,
            "transferEncoding": msg["Content-Transfer-Encoding"],
            "from": f"{name} <{sender}>",
            "to": "team@example.com",
            "subject": subject,
            "date": utc.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            "body": body.strip(),
        })

    # Git keeps no empty folder; a Maildir has tmp/ all the same.
    open(os.path.join(OUT, "tmp", ".keep"), "w").close()
    expected.sort(key=lambda e: e["date"], reverse=True)
    with open(os.path.join(OUT, "..", "maildir-charsets.json"), "w", encoding="utf-8") as f:
        json.dump(expected, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
