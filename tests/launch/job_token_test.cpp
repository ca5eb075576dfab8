// The job token: made from /dev/urandom, taken from PAISOAR_JOB_TOKEN when
// set, required (and named in the error) for a job of several nodes, checked
// for printable characters; compared without an early exit.
#include "launch/job_token.h"

#include <gtest/gtest.h>

namespace paisoar::launch {
namespace {

LaunchOptions nodes(int n) {
  LaunchOptions o;
  o.nnodes = n;
  o.program = {"prog"};
  return o;
}

TEST(JobToken, MadeTokensAre128RandomBits) {
  const std::string a = make_job_token();
  const std::string b = make_job_token();
  EXPECT_EQ(a.size(), 32u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos) << a;
  EXPECT_NE(a, b);
}

TEST(JobToken, TheEnvironmentWinsElseOneIsMade) {
  EXPECT_EQ(resolve_job_token(nodes(1), "s3cret"), "s3cret");
  EXPECT_EQ(resolve_job_token(nodes(3), "s3cret"), "s3cret");
  EXPECT_EQ(resolve_job_token(nodes(1), "").size(), 32u);
}

TEST(JobToken, SeveralNodesNeedTheSameExportedToken) {
  try {
    resolve_job_token(nodes(2), "");
    FAIL() << "expected LaunchUsageError";
  } catch (const LaunchUsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("--nnodes 2"), std::string::npos) << what;
    EXPECT_NE(what.find("export the same PAISOAR_JOB_TOKEN on every node"), std::string::npos)
        << what;
  }
}

TEST(JobToken, OnlyPrintableAsciiOfSaneLength) {
  EXPECT_THROW(resolve_job_token(nodes(1), "has space"), LaunchUsageError);
  EXPECT_THROW(resolve_job_token(nodes(1), "tab\there"), LaunchUsageError);
  EXPECT_THROW(resolve_job_token(nodes(1), std::string(1025, 'a')), LaunchUsageError);
  EXPECT_EQ(resolve_job_token(nodes(1), std::string(1024, 'a')).size(), 1024u);
}

TEST(JobToken, Equality) {
  EXPECT_TRUE(tokens_equal("abc", "abc"));
  EXPECT_FALSE(tokens_equal("abc", "abd"));
  EXPECT_FALSE(tokens_equal("abc", "abcd"));
  EXPECT_FALSE(tokens_equal("", "a"));
  EXPECT_TRUE(tokens_equal("", ""));
}

}  // namespace
}  // namespace paisoar::launch
