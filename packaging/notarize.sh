#!/bin/sh
# Notarize and staple a Developer-ID-signed SpecChat.app (build it with SPECCHAT_CODESIGN_IDENTITY set).
# Needs a notarytool keychain profile: xcrun notarytool store-credentials specchat --apple-id ... --team-id ...
set -eu
APP=${1:-dist/SpecChat.app}
PROFILE=${SPECCHAT_NOTARY_PROFILE:-specchat}
ZIP="$(dirname "$APP")/SpecChat-notarize.zip"
codesign --verify --deep --strict --verbose=2 "$APP"
ditto -c -k --keepParent "$APP" "$ZIP"
xcrun notarytool submit "$ZIP" --keychain-profile "$PROFILE" --wait
xcrun stapler staple "$APP"
spctl --assess --type execute --verbose "$APP"
rm -f "$ZIP"
