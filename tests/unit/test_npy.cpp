// The .npy reader and writer (src/core/npy.cpp) on well-formed files and on the malformed and hostile ones a
// user can pass to `wgi run --input`: each must be a wgi::Error naming the problem, never a crash, a huge
// read or allocation, or a silently different array. Well-formed files are built here byte by byte as
// numpy's format specification describes them (independent of npy::serialize), and read back compared
// element by element.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "core/npy.h"

namespace wgi {
namespace {

namespace fs = std::filesystem;

// A version-1 .npy file: magic, version 1.0, little-endian header length, the header padded with spaces to a
// multiple of 64 bytes and ended by a newline, then the data.
std::string npy_file(const std::string& header_dict, const std::string& data) {
  std::string header = header_dict;
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header + data;
}

std::string float_bytes(const std::vector<float>& values) {
  std::string s(values.size() * 4, '\0');
  if (!values.empty())
    std::memcpy(s.data(), values.data(), s.size());  // an empty vector's data() may be null
  return s;
}

std::string error_of(const std::string& bytes) {
  try {
    npy::parse(bytes, "'x.npy'");
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

class TempFile {
 public:
  explicit TempFile(const std::string& bytes) {
    static std::mt19937_64 rng(std::random_device{}());
    path_ = fs::temp_directory_path() / ("wgi_npy_test_" + std::to_string(rng()) + ".npy");
    std::ofstream out(path_, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  ~TempFile() {
    std::error_code ec;
    fs::remove(path_, ec);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string load_error(const fs::path& path) {
  try {
    npy::load(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Npy, ReadsWellFormedFilesOfEveryShapeForm) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-2, 2);
  std::vector<float> values(3 * 5);
  for (float& v : values) v = uniform(rng);
  struct Case {
    std::string shape_text;
    Shape shape;
    size_t count;
  };
  for (const Case& c : {Case{"(3, 5)", {3, 5}, 15}, Case{"(3, 5,)", {3, 5}, 15}, Case{"(15,)", {15}, 15},
                        Case{"()", {}, 1}, Case{"(3L, 5L)", {3, 5}, 15}, Case{"(0, 7)", {0, 7}, 0}}) {
    std::vector<float> want(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(c.count));
    for (const char* form : {"{'descr': '<f4', 'fortran_order': False, 'shape': %s, }",
                             "{\"shape\": %s, \"descr\": \"<f4\", \"fortran_order\": False}"}) {
      std::string dict = form;
      dict.replace(dict.find("%s"), 2, c.shape_text);
      Tensor t = npy::parse(npy_file(dict, float_bytes(want)), "'x.npy'");
      ASSERT_EQ(t.shape(), c.shape) << dict;
      ASSERT_EQ(t.dtype(), DType::Float32);
      auto got = t.data<float>();
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]) << dict << " element " << i;
    }
  }
}

TEST(Npy, SerializeRoundTripsThroughLoad) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int64_t> ints(-1000, 1000);
  std::vector<int64_t> values(2 * 3 * 7);
  for (int64_t& v : values) v = ints(rng);
  Tensor t = Tensor::from_vector<int64_t>({2, 3, 7}, values);
  TempFile file(npy::serialize(t));
  Tensor back = npy::load(file.path());
  ASSERT_EQ(back.shape(), (Shape{2, 3, 7}));
  ASSERT_EQ(back.dtype(), DType::Int64);
  for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(back.data<int64_t>()[i], values[i]);
}

// Each was a crash (std::out_of_range from substr or stoll) or a silently different shape before.
TEST(Npy, RejectsMalformedHeadersWithAMessage) {
  const std::string data = float_bytes(std::vector<float>(8, 1.0f));
  struct Case {
    std::string dict;
    std::string message;
  };
  for (const Case& c : {
           Case{"{'descr':", "expected the descr string in quotes"},
           Case{"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999, 4), }",
                "larger than 2^63 - 1"},
           Case{"{'descr': '<f4', 'fortran_order': False, 'shape': (-2, 4), }", "a negative dimension"},
           Case{"{'descr': '<f4', 'fortran_order': False, 'shape': (2a4), }", "expected ',' or ')'"},
           Case{"{'descr': '<f4', 'fortran_order': False, 'shape': (8), }", "not a tuple"},
           Case{"{'descr': '<f4', 'fortran_order': False, }", "no 'shape'"},
           Case{"{'descr': '<f4', 'shape': (8,), }", "no 'fortran_order'"},
           Case{"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (8,), }", "appears twice"},
           Case{"{'descr': '<f4', 'fortran_order': False, 'shape': (8,), 'extra': 1}",
                "unexpected key 'extra'"},
           Case{"{'descr': '<f4', 'fortran_order': True, 'shape': (8,), }", "Fortran-ordered"},
           Case{"{'descr': '<f4', 'fortran_order': False, 'shape': (8,), } junk", "after the closing"},
           Case{"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (8,), }", "structured dtypes"},
           Case{"{'descr': '>f4', 'fortran_order': False, 'shape': (8,), }", "unsupported .npy dtype '>f4'"},
       }) {
    EXPECT_NE(error_of(npy_file(c.dict, data)).find(c.message), std::string::npos)
        << c.dict << "\n -> " << error_of(npy_file(c.dict, data));
  }
}

TEST(Npy, RejectsShapesWhoseBytesOverflowOrDisagreeWithThePayload) {
  // 2^62 float32 elements: 2^64 bytes, which wrapped to 0 and was accepted from a 128-byte file.
  EXPECT_NE(
      error_of(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904,), }", ""))
          .find("more bytes than fit in memory"),
      std::string::npos);
  EXPECT_NE(
      error_of(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", ""))
          .find("more elements than fit in int64"),
      std::string::npos);
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), }";
  EXPECT_NE(error_of(npy_file(dict, float_bytes(std::vector<float>(7, 0.5f)))).find("needs exactly 32"),
            std::string::npos);
  EXPECT_NE(error_of(npy_file(dict, float_bytes(std::vector<float>(9, 0.5f)))).find("has 36 bytes"),
            std::string::npos);
}

TEST(Npy, RejectsTruncatedAndForeignFiles) {
  EXPECT_NE(error_of("").find("not a .npy file"), std::string::npos);
  EXPECT_NE(error_of(std::string(100, '\0')).find("not a .npy file"), std::string::npos);
  EXPECT_NE(error_of(std::string("\x93NUMPY\x01\x00", 8)).find("truncated"), std::string::npos);
  EXPECT_NE(error_of(std::string("\x93NUMPY\x01\x00\x40\x00{'descr'", 17)).find("truncated"),
            std::string::npos);
  EXPECT_NE(error_of(std::string("\x93NUMPY\x07\x00\x00\x00", 10)).find("format version 7"),
            std::string::npos);
  // Version 2 has a 4-byte header length: one past the cap is refused before anything is read.
  EXPECT_NE(error_of(std::string("\x93NUMPY\x02\x00\x01\x00\x01\x00", 12)).find("claims 65537 bytes"),
            std::string::npos);
}

TEST(Npy, LoadReadsTheHeaderFirstAndNeverAnEndlessFile) {
  // /dev/zero is endless: the old reader read it all (8 GB) before seeing it was no .npy file.
  EXPECT_NE(load_error("/dev/zero").find("not a .npy file"), std::string::npos);
  EXPECT_NE(load_error(fs::temp_directory_path()).find("is a directory"), std::string::npos);
  EXPECT_NE(load_error("/nonexistent/x.npy").find("cannot open"), std::string::npos);
  // A header claiming far more data than the file holds: refused from the file's size, nothing allocated.
  TempFile big_claim(
      npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000,), }", "abcd"));
  EXPECT_NE(load_error(big_claim.path()).find("payload has 4 bytes"), std::string::npos);
}

TEST(Tensor, RefusesShapesWhoseBytesDoNotFitInsteadOfWrapping) {
  try {
    Tensor t(DType::Float32, {int64_t{1} << 62});
    FAIL() << "a 2^64-byte tensor was made with " << t.byte_size() << " bytes";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("more bytes than fit in memory"), std::string::npos) << e.what();
  }
}

TEST(Tensor, TurnsAFailedAllocationIntoAnError) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer reports a 4 TiB allocation instead of failing it";
#endif
  try {
    // 2^40 float32: fits in size_t but not in any test machine's memory (the old code threw std::bad_alloc).
    Tensor t(DType::Float32, {int64_t{1} << 20, int64_t{1} << 20});
    FAIL() << "a 4 TiB tensor was allocated";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of host memory"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace wgi
