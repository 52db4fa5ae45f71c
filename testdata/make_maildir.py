#!/usr/bin/env python3
"""Write testdata/maildir-charsets: one message per charset a mail program writes.

Each message has its sender's name and its subject RFC 2047-encoded in its charset and a
text/plain body in that charset, with the Content-Transfer-Encoding Python's email package
picks for it (base64, quoted-printable or 7bit). Beside the Maildir,
maildir-charsets.json holds what the service must hand the model for each message, in
UTF-8, newest first as in $EMAILS. The Go tests read only the output, so they do not need Python.

Run from the repository root:  python3 testdata/make_maildir.py
Re-running it writes the same files: delivery times and file names are fixed.
"""

import datetime
import email.header
import email.message
import email.utils
import json
import mailbox
import os
import shutil

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "maildir-charsets")

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


def main():
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
