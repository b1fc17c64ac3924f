# Its check, run in the work directory of each recovered filesystem. $PP_REQUIRED_IDS (or the
# file $PP_REQUIRED, one a line) holds the IDs of the acks this crash state owes.
# Print `lost ID REASON` for each owed ID whose data is gone, `inconsistent REASON` for a
# state the application could never have been in; other lines are ignored.
for id in $PP_REQUIRED_IDS; do
    [ "$(cat rec-$id 2>/dev/null)" = "record $id" ] || echo "lost $id rec-$id is missing or wrong"
done
# The records were written in order, so a record without its predecessor cannot happen.
for f in rec-*; do
    [ -e "$f" ] || continue
    n=${f#rec-}
    [ "$n" -le 1 ] || [ -e "rec-$((n - 1))" ] || echo "inconsistent rec-$n exists without rec-$((n - 1))"
done
