// The config as text: bytes that are not UTF-8 text, a quote or bracket left
// open at the end, several documents in one file, and YAML syntax errors are
// refused with the file, line and column and what to fix, in words that carry
// no library's name; user input echoed in a message prints as text.
#include <gtest/gtest.h>

#include "paisoar/train/train_config.h"
#include "src/util/text_check.h"
#include "tests/support/expect_error.h"

using namespace paisoar::train;
using paisoar::testing::expect_error_of;

namespace {

TrainConfig config_from_text(const std::string& text) {
  TrainConfig c;
  schema_for(c).load_yaml(text, "test.yaml");
  return c;
}

std::string text_config_error(const std::string& text) {
  try {
    config_from_text(text);
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted: " << text;
  return "";
}

}  // namespace

TEST(ConfigText, BytesThatAreNotTextAreRefusedWithLineAndColumn) {
  EXPECT_NE(text_config_error("seed: 1\noptimizer:\n  l\x01r: 0.1\n").find("test.yaml:3:4: byte 0x01 (a control character)"),
            std::string::npos);
  EXPECT_NE(text_config_error("seed: 1\xff\n").find("test.yaml:1:8: byte 0xFF (not UTF-8 text)"), std::string::npos);
  EXPECT_NE(text_config_error(std::string("seed: \0", 7)).find("a NUL byte"), std::string::npos);
  EXPECT_NE(text_config_error("seed: \xc3(\n").find("not UTF-8 text"), std::string::npos);       // a cut sequence
  EXPECT_NE(text_config_error("seed: \xc0\xaf\n").find("not UTF-8 text"), std::string::npos);    // overlong
  EXPECT_NE(text_config_error("seed: \xed\xa0\x80\n").find("not UTF-8 text"), std::string::npos);  // a surrogate
  EXPECT_NE(text_config_error("seed: 1\x7f\n").find("byte 0x7F"), std::string::npos);
  EXPECT_NE(text_config_error("seed: \x1b[31m1\n").find("remove it, or save the file as UTF-8 text"), std::string::npos);
}

TEST(ConfigText, TextThatIsUtf8IsTaken) {
  EXPECT_EQ(config_from_text("\xef\xbb\xbfseed: 7\n").seed, 7);  // a byte-order mark
  EXPECT_EQ(config_from_text("# caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x99\x82\r\nseed: 8\r\n").seed, 8);
  EXPECT_EQ(config_from_text("run_dir: \"runs/\xc3\xa9t\xc3\xa9\"\n").run_dir, "runs/\xc3\xa9t\xc3\xa9");
  EXPECT_EQ(config_from_text("seed: 9\n...\n").seed, 9);
  EXPECT_EQ(config_from_text("run_dir: 'it''s'\n").run_dir, "it's");
}

TEST(ConfigText, SomethingLeftOpenAtTheEndIsRefused) {
  for (const char* text : {"run_dir: \"runs/x\n", "run_dir: 'runs/x\n", "run_dir: \"runs/x", "model:\n  hidden: [1, 2\n",
                           "model: {name: mlp\n"}) {
    const std::string message = text_config_error(text);
    EXPECT_NE(message.find("test.yaml: not valid YAML: the text ends inside something it opened"), std::string::npos)
        << message;
    EXPECT_NE(message.find("close the quote, [ or {"), std::string::npos) << message;
  }
}

TEST(ConfigText, SeveralDocumentsAreRefused) {
  EXPECT_NE(text_config_error("seed: 1\n---\nseed: 2\n").find("test.yaml: holds more than one YAML document"), std::string::npos);
  EXPECT_NE(text_config_error("seed: 1\n---\n").find("holds more than one YAML document"), std::string::npos);
}

TEST(ConfigText, SyntaxErrorsNameLineAndColumnWithoutTheLibrary) {
  for (const char* text : {"optimizer:\n\tlr: 0.1\n", "seed: *nope\n", "optimizer: [lr: 0.1\nseed: 1\n"}) {
    const std::string message = text_config_error(text);
    EXPECT_NE(message.find("not valid YAML"), std::string::npos) << message;
    EXPECT_EQ(message.find("yaml-cpp"), std::string::npos) << message;
  }
  EXPECT_NE(text_config_error("optimizer:\n\tlr: 0.1\n").find("test.yaml:2:"), std::string::npos);
  EXPECT_NE(text_config_error("seed: *nope\n").find("test.yaml:1:7: not valid YAML: the referenced anchor is not defined"),
            std::string::npos);
}

TEST(ConfigText, SetValuesAreCheckedTheSameWay) {
  TrainConfig c;
  auto schema = schema_for(c);
  expect_error_of<ConfigError>([&] { schema.set("run_dir=\"runs/x"); },
                               {"--set run_dir: not valid YAML: the text ends inside something it opened"});
  expect_error_of<ConfigError>([&] { schema.set("run_dir=a\x01" "b"); }, {"--set run_dir:1:2: byte 0x01"});
  expect_error_of<ConfigError>([&] { schema.set("optim\x02izer.lr=0.1"); },
                               {"--set: unknown key 'optim\\x02izer.lr'"});
  schema.set("run_dir=runs/\xc3\xa9");
  EXPECT_EQ(c.run_dir, "runs/\xc3\xa9");
}

TEST(ConfigText, AGarbledKeyGetsNoFarFetchedSuggestion) {
  const std::string garbled = text_config_error("The bad-input campaign's config: 1\n");
  EXPECT_NE(garbled.find("unknown key 'The bad-input campaign\\'s config'"), std::string::npos) << garbled;
  EXPECT_EQ(garbled.find("did you mean"), std::string::npos) << garbled;
  EXPECT_NE(text_config_error("optimizer:\n  lrr: 0.1\n").find("did you mean 'optimizer.lr'"), std::string::npos);
  EXPECT_NE(text_config_error("optimiser:\n  lr: 0.1\n").find("did you mean 'optimizer'"), std::string::npos);
}

TEST(ShownText, EscapesWhatWouldNotPrintAndKeepsUtf8) {
  using paisoar::util::shown;
  EXPECT_EQ(shown("optimizer.lr"), "'optimizer.lr'");
  EXPECT_EQ(shown("a\x01" "b\xff\n"), "'a\\x01b\\xFF\\x0A'");
  EXPECT_EQ(shown("caf\xc3\xa9"), "'caf\xc3\xa9'");
  EXPECT_EQ(shown("it's"), "'it\\'s'");
}
