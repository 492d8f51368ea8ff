// wgi::printable: the one helper that makes a model's (or user's) strings safe in a message. Expected strings
// are written out by hand from the rules in include/wgi/printable.h.
#include <gtest/gtest.h>

#include <string>

#include "ops/op.h"
#include "wgi/printable.h"

namespace wgi {
namespace {

TEST(Printable, EscapesControlBytesAndKeepsPrintableUtf8) {
  EXPECT_EQ(printable("relu_1/out:0"), "relu_1/out:0");
  EXPECT_EQ(printable(std::string("a\x1b[2Jb", 6)), "a\\x1B[2Jb");
  EXPECT_EQ(printable(std::string("cut\0here", 8)), "cut\\x00here");
  EXPECT_EQ(printable("line\nbreak\ttab\x7f"), "line\\x0Abreak\\x09tab\\x7F");
  EXPECT_EQ(printable("caf\xc3\xa9 \xe5\x90\x8d"), "caf\xc3\xa9 \xe5\x90\x8d");  // é, a CJK character
  EXPECT_EQ(printable("\xc2\x9b"
                      "31m"),
            "\\u{9B}31m");  // C1 CSI in UTF-8
  EXPECT_EQ(printable("abc\xe2\x80\xae"
                      "fdp.exe"),
            "abc\\u{202E}fdp.exe");                // right-to-left override
  EXPECT_EQ(printable("\xff\xc3"), "\\xFF\\xC3");  // invalid, truncated UTF-8
  EXPECT_EQ(printable("\xc0\xaf"), "\\xC0\\xAF");  // overlong '/'
}

TEST(Printable, CutsLongTextAndSaysHowMuchWasLeftOut) {
  const std::string huge(1 << 20, 'x');
  const std::string cut = printable(huge, 10);
  EXPECT_EQ(cut, "xxxxxxxxxx...(1048566 more bytes)");
  EXPECT_EQ(printable(std::string(10, 'y'), 10), std::string(10, 'y'));
  // The message form keeps newlines and cuts each line on its own.
  EXPECT_EQ(printable_message("ab\x1b"
                              "c\n" +
                                  std::string(8, 'z') + "\nok",
                              4),
            "ab\\x1B...(1 more bytes)\nzzzz...(4 more bytes)\nok");
}

TEST(Printable, NodeDescriptionsEscapeTheModelsNames) {
  ops::NodeInfo node{std::string("n\x1b]0;pwned\x07", 11), std::string(5000, 'O'), "", 13, {}, {}, {}};
  const std::string d = node.describe();
  EXPECT_EQ(d.find('\x1b'), std::string::npos);
  EXPECT_NE(d.find("n\\x1B]0;pwned\\x07"), std::string::npos) << d;
  EXPECT_LT(d.size(), 400u) << "a 5000-byte op_type must be cut";
  EXPECT_NE(d.find("more bytes)"), std::string::npos) << d;
}

}  // namespace
}  // namespace wgi
