// SKELETON: replaced by the TDL library.
