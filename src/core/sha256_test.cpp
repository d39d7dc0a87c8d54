// sha256_test.cpp — FIPS 180-4 test vectors and field framing.
#include "core/sha256.h"

#include <gtest/gtest.h>

namespace kevin {
namespace {

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, IncrementalEqualsOneShot) {
  Sha256 h;
  h.update("hello ").update("world");
  EXPECT_EQ(h.hex_digest(), sha256_hex("hello world"));
}

TEST(Sha256, FieldsAreFramed) {
  EXPECT_NE(Sha256().update_field("ab").update_field("c").hex_digest(),
            Sha256().update_field("a").update_field("bc").hex_digest());
}

}  // namespace
}  // namespace kevin
