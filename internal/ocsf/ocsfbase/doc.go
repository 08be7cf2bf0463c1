// Package ocsfbase is what the mappings of every source share with the
// event they feed: OCSF 1.3.0's base event as package ocsf writes it (the
// classes with their captions, the activity, severity and status enums)
// and the two things a source's mapping hands over, its Source (class,
// known members, record time) and the Head its first step fills.
//
// It imports ocsfrec (and through it ocsfjson and record) only: no
// source's mapping, nothing of the layers above it (internal/archtest).
package ocsfbase
