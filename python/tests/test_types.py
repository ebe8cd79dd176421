"""Output values as the server writes them."""
import datetime
import unittest

from autocoder.types import output_value, parse_datetime


class DatetimeTest(unittest.TestCase):
    def test_fractions_of_any_length(self):
        # The server writes as many fraction digits as it needs (Go's
        # RFC3339Nano); Python before 3.11 reads three or six only.
        utc = datetime.timezone.utc
        for text, want in [
            ("2026-11-28T08:00:00Z", datetime.datetime(2026, 11, 28, 8, 0, 0, tzinfo=utc)),
            ("2026-11-28T08:00:00.5Z", datetime.datetime(2026, 11, 28, 8, 0, 0, 500000, tzinfo=utc)),
            ("2026-11-28T08:00:00.12345Z", datetime.datetime(2026, 11, 28, 8, 0, 0, 123450, tzinfo=utc)),
            ("2026-11-28T08:00:00.123456789+02:00",
             datetime.datetime(2026, 11, 28, 8, 0, 0, 123456, tzinfo=datetime.timezone(datetime.timedelta(hours=2)))),
        ]:
            with self.subTest(text=text):
                self.assertEqual(parse_datetime(text), want)
                self.assertEqual(output_value("datetime", text, None, "t"), want)


if __name__ == "__main__":
    unittest.main()
