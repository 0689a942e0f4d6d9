// The page after a rater's last item: "u" undoes the last answer while the undo form is shown.
document.addEventListener("keydown", function (e) {
  var f = document.getElementById("undo-form");
  if (f && (e.key === "u" || e.key === "U")) { e.preventDefault(); f.submit(); }
});
