// RAII handles and typed helpers over the HDF5 C API, used by the run file (run_file.hpp) only.
// Every hid_t is owned by a Handle that closes it with its kind's function; every failed call
// throws ablate::Error naming the file, the object path inside it, and HDF5's own reason.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ablate::results::h5 {

// Owns one hid_t and closes it with the function of its kind (H5Fclose, H5Dclose, ...).
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer close) : id_(id), close_(close) {}
  Handle(Handle&& o) noexcept : id_(std::exchange(o.id_, H5I_INVALID_HID)), close_(o.close_) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = std::exchange(o.id_, H5I_INVALID_HID);
      close_ = o.close_;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }

  hid_t get() const { return id_; }
  explicit operator bool() const { return id_ >= 0; }
  // Closes now; returns HDF5's status (the destructor ignores it).
  herr_t reset() noexcept {
    herr_t status = 0;
    if (id_ >= 0 && close_) status = close_(id_);
    id_ = H5I_INVALID_HID;
    return status;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer close_ = nullptr;
};

// Silences HDF5's automatic error-stack printing while alive (errors become exceptions instead).
class Quiet {
 public:
  Quiet();
  ~Quiet();
  Quiet(const Quiet&) = delete;
  Quiet& operator=(const Quiet&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

// HDF5's reason for the last failure (outermost and innermost messages of its error stack), then clears the stack.
std::string hdf5_reason();

// Throws ablate::Error "cannot <what> <path> in <file>: <HDF5's reason>" with `hint`.
[[noreturn]] void fail(const std::string& file, const std::string& path, const std::string& what, const std::string& hint = {});

// An open file, group or dataset with the names error messages need.
struct Obj {
  Handle handle;
  std::string file;  // the file's name
  std::string path;  // the object's path inside it, "/" for the root
  hid_t id() const { return handle.get(); }
  std::string child(std::string_view name) const {
    std::string p = path;
    if (p != "/") p += '/';
    return p.append(name);
  }
};

// Types: owned copies (fixed-length and variable-length UTF-8 strings).
Handle vl_string_type();
Handle fixed_string_type(std::size_t bytes);

// Property lists and spaces.
Handle plist(hid_t cls);
Handle scalar_space();
Handle simple_space(const std::vector<hsize_t>& dims, const std::vector<hsize_t>* max_dims = nullptr);

// Groups and datasets.
Obj create_group(const Obj& parent, std::string_view name, bool track_order);
Obj open_group(const Obj& parent, std::string_view name);
Obj open_dataset(const Obj& parent, std::string_view name);
bool has_link(const Obj& parent, std::string_view name);
// The links in a group: by creation order where the group tracks it, else by name.
std::vector<std::string> children(const Obj& group);

// A dataset [0, row...] growing along its first axis: chunked `chunk_rows` rows at a time,
// shuffle + deflate when `compress`, unwritten elements read as `fill` (given in `fill_type`).
Obj create_appendable(const Obj& parent, std::string_view name, hid_t file_type, const std::vector<hsize_t>& row,
                      hsize_t chunk_rows, bool compress, hid_t fill_type, const void* fill);
// A fixed-shape contiguous dataset written once from `data` (in `mem_type`).
Obj create_fixed(const Obj& parent, std::string_view name, hid_t file_type, const std::vector<hsize_t>& dims, hid_t mem_type,
                 const void* data);
// A 1-D dataset of variable-length UTF-8 strings, written once.
Obj create_strings(const Obj& parent, std::string_view name, const std::vector<std::string>& values);

std::vector<hsize_t> dims(const Obj& dataset);
// Sets the first axis to `rows` (growing or shrinking), keeping the others.
void set_rows(const Obj& dataset, hsize_t rows);
// Writes / reads rows [first, first + count) of the whole row shape, from / into `buf` in `mem_type`.
void write_rows(const Obj& dataset, hsize_t first, hsize_t count, hid_t mem_type, const void* buf);
void read_rows(const Obj& dataset, hsize_t first, hsize_t count, hid_t mem_type, void* buf);
// Rows [first, first + count) of a string dataset (variable- or fixed-length), flattened.
std::vector<std::string> read_string_rows(const Obj& dataset, hsize_t first, hsize_t count);
// Re-reads the dataset's metadata from the file (SWMR readers: new extents).
void refresh(const Obj& dataset);

// Attributes. The string and array setters replace an existing attribute (before SWMR writing
// only); the integer setter and set_fixed_attr rewrite an existing one in place (fixed size:
// allowed while SWMR writing). set_fixed_attr creates `bytes` bytes, and keeps the size an
// existing attribute has (a file written with a smaller size), cutting the value to fit.
bool has_attr(const Obj& obj, std::string_view name);
void set_attr(const Obj& obj, std::string_view name, std::string_view value);
void set_attr(const Obj& obj, std::string_view name, std::int64_t value);
void set_attr(const Obj& obj, std::string_view name, const std::vector<std::string>& values);
void set_attr(const Obj& obj, std::string_view name, const std::vector<std::int64_t>& values);
void set_fixed_attr(const Obj& obj, std::string_view name, std::string_view value, std::size_t bytes);
std::string string_attr(const Obj& obj, std::string_view name);  // variable- or fixed-length
std::int64_t int_attr(const Obj& obj, std::string_view name);
std::vector<std::string> strings_attr(const Obj& obj, std::string_view name);
std::vector<std::int64_t> ints_attr(const Obj& obj, std::string_view name);

// `s` cut to at most `bytes` bytes without splitting a UTF-8 character.
std::string fit_utf8(std::string_view s, std::size_t bytes);

}  // namespace ablate::results::h5
